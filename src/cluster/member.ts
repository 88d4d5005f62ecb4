import type { Logger } from "pino";
import { coalesced } from "../coalesced.js";
import type { ClusterProcess, Fence } from "../store/cluster.js";
import type { ClusterStore } from "../store/postgres/cluster-store.js";
import {
  afterClaim,
  afterSilence,
  holds,
  type LeaseChange,
  type LeaseState,
  type LeaseTiming,
  NOT_HELD,
} from "./lease-policy.js";

/** Told when a wanted lease becomes this process's, and when it stops being (always in that order). */
export interface LeaseHandlers {
  gained(fence: Fence): void;
  lost(fence: Fence): void;
  /** A round ended without the lease: another process has it, or the database did not answer. */
  denied?(): void;
}

type Wanted = { state: LeaseState; handlers: LeaseHandlers };

interface MemberDeps {
  store: ClusterStore;
  process: ClusterProcess;
  timing: LeaseTiming;
  log: Pick<Logger, "info" | "warn">;
}

/** Processes silent this long are dropped from the cluster's list (a day: long enough to be seen in status). */
const FORGET_AFTER_MS = 24 * 3600_000;
const FORGET_EVERY_ROUNDS = 500;

/** This process in the cluster: one round trip every `renewEveryMs` heartbeats and keeps the leases it wants. A lease
 * is held only until its local validity ends (lease-policy.ts): unrenewed by then, it is lost here, whatever the
 * database says, as another process may take it from then on. */
export class ClusterMember {
  private readonly wanted = new Map<string, Wanted>();
  private timer?: NodeJS.Timeout;
  // Rounds run one at a time; asked for during one, another follows it.
  private readonly rounds = coalesced(async () => {
    if (!this.stopped) await this.round();
  });
  private roundCount = 0;
  private failing = false;
  private stopped = false;

  constructor(private readonly deps: MemberDeps) {}

  start(): void {
    this.timer = setInterval(() => this.tick(), this.deps.timing.renewEveryMs);
    this.rounds.run();
  }

  /** Starts trying for a lease (at once, then every round) until unwant(). */
  want(name: string, handlers: LeaseHandlers): void {
    if (this.wanted.has(name)) throw new Error(`the lease "${name}" is wanted already`);
    if (this.stopped) {
      queueMicrotask(() => handlers.denied?.());
      return;
    }
    this.wanted.set(name, { state: NOT_HELD, handlers });
    this.rounds.run();
  }

  /** Stops wanting a lease and gives it back in the database, so another process takes it at once. */
  async unwant(name: string): Promise<void> {
    const entry = this.wanted.get(name);
    this.wanted.delete(name);
    if (entry?.state.epoch === undefined) return;
    await this.deps.store
      .release(this.deps.process.id, [name])
      .catch((err: Error) => this.warn(err, "could not give a lease back"));
  }

  fence(name: string): Fence | undefined {
    const entry = this.wanted.get(name);
    return entry && holds(entry.state, performance.now()) && entry.state.epoch !== undefined
      ? { name, epoch: entry.state.epoch }
      : undefined;
  }

  /** Stops the rounds and leaves the cluster, giving back every lease (their holders stopped first). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.rounds.idle();
    for (const [name, entry] of this.wanted) {
      if (entry.state.epoch === undefined) entry.handlers.denied?.();
      else this.apply(name, entry, { state: NOT_HELD, change: "lost" });
    }
    this.wanted.clear();
    await this.deps.store
      .leave(this.deps.process.id)
      .catch((err: Error) => this.warn(err, "could not leave the cluster"));
  }

  private tick(): void {
    // Even while a round is stuck (the database does not answer), a lease ends on time.
    for (const [name, entry] of this.wanted) this.apply(name, entry, afterSilence(entry.state, performance.now()));
    this.rounds.run();
  }

  private async round(): Promise<void> {
    const { store, timing, process } = this.deps;
    const names = [...this.wanted.keys()];
    const sentAt = performance.now();
    try {
      const [held] = await Promise.all([store.claim(process.id, names, timing.ttlMs), store.heartbeat(process)]);
      if (++this.roundCount % FORGET_EVERY_ROUNDS === 0) await store.forgetSilent(FORGET_AFTER_MS);
      if (this.failing) this.deps.log.info("the cluster's database answers again");
      this.failing = false;
      const now = performance.now();
      for (const name of names) {
        const entry = this.wanted.get(name);
        if (entry) this.apply(name, entry, afterClaim(entry.state, held.get(name), sentAt, now, timing));
      }
      // Unwanted while the claim was on its way: give back what it took.
      const stray = [...held.keys()].filter((name) => !this.wanted.has(name));
      if (stray.length > 0) await store.release(process.id, stray);
    } catch (err) {
      if (!this.failing)
        this.warn(err as Error, "the cluster's database does not answer; leases end when they run out");
      this.failing = true;
    }
    for (const name of names) {
      const entry = this.wanted.get(name);
      if (entry && entry.state.epoch === undefined) entry.handlers.denied?.();
    }
  }

  private apply(name: string, entry: Wanted, { state, change }: { state: LeaseState; change: LeaseChange }): void {
    const before = entry.state.epoch;
    entry.state = state;
    if ((change === "lost" || change === "changed hands") && before !== undefined)
      entry.handlers.lost({ name, epoch: before });
    if ((change === "gained" || change === "changed hands") && state.epoch !== undefined)
      entry.handlers.gained({ name, epoch: state.epoch });
  }

  private warn(err: Error, message: string): void {
    this.deps.log.warn({ err: err.message }, message);
  }
}
