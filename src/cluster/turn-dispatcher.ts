import type { Logger } from "pino";
import type { InboundMessage } from "../bus/types.js";
import { coalesced } from "../coalesced.js";
import type { Fence } from "../store/cluster.js";
import type { ClusterWork } from "../store/postgres/cluster-work.js";
import type { ClusterMember } from "./member.js";

/** The lease that lets one process at a time run a conversation's turns. */
export const turnLeaseName = (sessionKey: string) => `turn:${sessionKey}`;

/** A missed notification costs at most this: a pass also runs this often without being woken. */
const POLL_MS = 1000;

interface DispatcherDeps {
  work: ClusterWork;
  member: ClusterMember;
  /** Hands messages of a conversation this process holds to the worker, oldest first. */
  run(msg: InboundMessage): void;
  /** The conversation's lease was lost (this process was paused or cut off): its running turn is aborted and its queued
   * messages dropped here; they stay pending for the process that has it now. */
  drop(sessionKey: string): void;
  /** How many more conversations the worker can take now (its cap less what it runs). */
  room(): number;
  log: Pick<Logger, "warn">;
}

/** Clustered mode's way into the worker. Channels only store what arrives (the shared inbox); each process takes
 * waiting conversations nobody runs under their turn lease, runs their messages in order until none is left (a /stop
 * reaches its turn), then gives them back. Their turns' writes are fenced with the lease's epoch (Store.fenced), so a
 * process paused past its lease cannot write after another took over. */
export class TurnDispatcher {
  /** Conversations held here, with their messages handed to the worker: all of them, and those not finished. */
  private readonly held = new Map<string, { seen: Set<string>; queued: Set<string> }>();
  private timer?: NodeJS.Timeout;
  private unlisten?: () => Promise<void>;
  private readonly passes = coalesced(async () => {
    if (this.stopped) return;
    await this.pass().catch((err: Error) =>
      this.deps.log.warn({ err: err.message }, "could not look for waiting conversations"),
    );
  });
  private stopped = false;

  constructor(private readonly deps: DispatcherDeps) {}

  start(): void {
    this.unlisten = this.deps.work.listen(() => this.wake());
    this.timer = setInterval(() => this.wake(), POLL_MS);
    this.wake();
  }

  /** Looks for work now (coalesced: one pass at a time, and one more if woken during it). */
  wake(): void {
    if (!this.stopped) this.passes.run();
  }

  /** The worker finished a message's turn (its result is stored): the next one, or give the conversation back. */
  finished(msg: InboundMessage): void {
    const entry = this.held.get(msg.sessionKey);
    entry?.queued.delete(msg.id);
    // Nothing queued here any more: anything newer is picked up by the pass, or the lease goes.
    if (entry?.queued.size === 0) this.wake();
  }

  fence(sessionKey: string): Fence | undefined {
    return this.deps.member.fence(turnLeaseName(sessionKey));
  }

  /** Stops taking work and gives every conversation back (call after the worker stopped). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.passes.idle();
    await this.unlisten?.();
    await Promise.all([...this.held.keys()].map((key) => this.deps.member.unwant(turnLeaseName(key))));
    this.held.clear();
  }

  private async pass(): Promise<void> {
    const { work } = this.deps;
    if (this.held.size > 0) {
      const keys = [...this.held.keys()];
      const pending = await work.pendingOf(keys);
      // Every message pending for them is seen once handed over: those with none left to finish are done.
      this.handOver(pending);
      const done = keys.filter((key) => this.held.get(key)?.queued.size === 0);
      for (const key of done) this.held.delete(key);
      await Promise.all(done.map((key) => this.deps.member.unwant(turnLeaseName(key))));
      // Given back with nothing pending, but a message may have come in just now: others look too.
      if (done.length > 0) await work.announce();
    }
    const room = this.deps.room() - [...this.held.values()].filter((entry) => entry.queued.size > 0).length;
    if (room <= 0 || this.stopped) return;
    // All at once: the member claims the leases wanted meanwhile in one round trip, not one each.
    const free = (await work.freeSessions(room)).filter((key) => !this.held.has(key));
    const taken = await Promise.all(free.map((key) => this.take(key)));
    const mine = free.filter((_, i) => taken[i] !== undefined);
    for (const key of mine) this.held.set(key, { seen: new Set(), queued: new Set() });
    if (this.stopped) return;
    if (mine.length > 0) this.handOver(await work.pendingOf(mine));
  }

  private handOver(messages: InboundMessage[]): void {
    // A message seen before may still be listed by a query that began before its turn was stored.
    for (const msg of messages) {
      const entry = this.held.get(msg.sessionKey);
      if (!entry || entry.seen.has(msg.id)) continue;
      entry.seen.add(msg.id);
      entry.queued.add(msg.id);
      this.deps.run(msg);
    }
  }

  private lost(key: string): void {
    if (!this.held.delete(key)) return;
    this.deps.log.warn({ session: key }, "lost a conversation's turn lease; another process runs it now");
    this.deps.drop(key);
    void this.deps.member.unwant(turnLeaseName(key));
  }

  /** Tries once for the conversation's lease: the fence when this process has it now. */
  private take(sessionKey: string): Promise<Fence | undefined> {
    const { member } = this.deps;
    const name = turnLeaseName(sessionKey);
    // A lease is lost only after it was gained, and nothing is told after unwant(); a second gained() resolves nothing.
    return new Promise((resolve) => {
      let gained = false;
      member.want(name, {
        gained: (fence) => {
          gained = true;
          resolve(fence);
        },
        lost: () => this.lost(sessionKey),
        denied: () => {
          if (!gained) void member.unwant(name).then(() => resolve(undefined));
        },
      });
    });
  }
}
