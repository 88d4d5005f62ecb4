import type { Logger } from "pino";
import type { InboundMessage } from "../bus/types.js";

/** One conversation's queue: its messages run strictly one after another. */
export interface Lane {
  key: string;
  queue: InboundMessage[];
  running?: AbortController;
  /** Set while the lane's first message waits for the model; `resume` runs it again. */
  pausedUntil?: number;
  resume?: NodeJS.Timeout;
}

/** Runs one message's turn (`signal`: /stop and the shutdown); returns when to run it again if the model was away. */
export type RunTurn = (msg: InboundMessage, signal: AbortSignal) => Promise<number | undefined>;

/** Why a turn was cut short when its conversation moved to another process of the cluster. */
export class ConversationMovedError extends Error {}

/** The conversations' queues: per conversation in order, across them in parallel up to `maxConcurrent()`; a message
 * the model was away for pauses its lane until it is worth asking again. None is dropped. */
export class Lanes {
  private readonly lanes = new Map<string, Lane>();
  /** Lanes with work that wait for a free slot under the global cap, in arrival order. */
  private readonly waiting: Lane[] = [];
  private readonly turns = new Set<Promise<void>>();
  private active = 0;

  constructor(
    private readonly deps: { run: RunTurn; maxConcurrent: () => number; log: Pick<Logger, "error"> },
    /** Aborted by stop(): running turns end, their messages stay pending in the inbox for after a restart. */
    private readonly shutdown: AbortController,
  ) {}

  lane(key: string): Lane {
    const lane = this.lanes.get(key) ?? { key, queue: [] };
    this.lanes.set(key, lane);
    return lane;
  }

  push(msg: InboundMessage): void {
    const lane = this.lane(msg.sessionKey);
    lane.queue.push(msg);
    this.schedule(lane);
  }

  async stop(): Promise<void> {
    this.shutdown.abort(new Error("pincer is shutting down"));
    // A turn's one signal carries both /stop and the shutdown (cheaper than combining two per turn).
    for (const lane of this.lanes.values()) lane.running?.abort(this.shutdown.signal.reason);
    for (const lane of this.lanes.values()) clearTimeout(lane.resume);
    await Promise.allSettled([...this.turns]);
  }

  /** Clustered, the turn lease went elsewhere: abort the turn unwritten, drop the queue (it stays in the shared inbox). */
  drop(sessionKey: string): void {
    const lane = this.lanes.get(sessionKey);
    if (!lane) return;
    lane.queue.length = 0;
    lane.running?.abort(new ConversationMovedError(`the conversation ${sessionKey} moved to another process`));
  }

  get load(): { running: number; queued: number } {
    const queued = [...this.lanes.values()].reduce((sum, lane) => sum + lane.queue.length, 0);
    return { running: this.active, queued };
  }

  get runningSessions(): string[] {
    return [...this.lanes.values()].filter((lane) => lane.running).map((lane) => lane.key);
  }

  private schedule(lane: Lane): void {
    if (!lane.running && lane.queue.length === 0) this.lanes.delete(lane.key);
    if (lane.running || lane.queue.length === 0 || lane.pausedUntil !== undefined) return;
    if (this.active >= this.deps.maxConcurrent()) {
      if (!this.waiting.includes(lane)) this.waiting.push(lane);
      return;
    }
    const msg = lane.queue.shift()!;
    const controller = new AbortController();
    if (this.shutdown.signal.aborted) controller.abort(this.shutdown.signal.reason);
    lane.running = controller;
    this.active++;
    const turn = this.deps
      .run(msg, controller.signal)
      .then((retryAt) => {
        if (retryAt !== undefined && !this.shutdown.signal.aborted) this.pause(lane, msg, retryAt);
      })
      // The turn answers every failure itself; this catches a failure of that answer (the database).
      .catch((err: unknown) => this.deps.log.error({ err, session: msg.sessionKey }, "could not finish a turn"))
      .finally(() => {
        lane.running = undefined;
        this.active--;
        this.turns.delete(turn);
        if (this.shutdown.signal.aborted) return;
        this.schedule(lane);
        while (this.active < this.deps.maxConcurrent() && this.waiting.length > 0) this.schedule(this.waiting.shift()!);
      });
    this.turns.add(turn);
  }

  private pause(lane: Lane, msg: InboundMessage, retryAt: number): void {
    lane.queue.unshift(msg);
    lane.pausedUntil = retryAt;
    lane.resume = setTimeout(() => this.unpause(lane), Math.max(0, retryAt - Date.now()));
  }

  unpause(lane: Lane): void {
    clearTimeout(lane.resume);
    lane.pausedUntil = lane.resume = undefined;
    this.schedule(lane);
  }
}
