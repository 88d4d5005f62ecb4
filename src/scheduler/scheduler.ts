import type { Logger } from "pino";
import type { MessageBus } from "../bus/bus.js";
import type { ChannelName, InboundMessage } from "../bus/types.js";
import { deliveryId, runMessage } from "./delivery.js";
import type { CronJob, JobOwner, JobStore } from "./job-store.js";
import { nextRun } from "./schedule.js";

/** Timer functions, passed in so tests can drive time by hand. */
export interface Timers {
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

export interface SchedulerDeps {
  /** Must share its database connection with the bus's journal: a run is published in the job's transaction. */
  store: JobStore;
  bus: MessageBus;
  /** The inbox: whether a run's message still waits for (or is in) its turn. */
  inbox: { isPending(msg: Pick<InboundMessage, "channel" | "chatId" | "id">): boolean };
  log: Logger;
  /** Whether a job's creator may still talk to pincer (the access gate): a job runs only while they may. */
  ownerHasAccess: (owner: JobOwner) => boolean;
  now?: () => number;
  timers?: Timers;
  /** The longest the timer sleeps, so a wall-clock jump or a job added by another process is noticed. */
  maxSleepMs?: number;
}

/** After a tick that failed as a whole (the database was busy), the next try comes this soon. */
const RETRY_TICK_MS = 5_000;

/** After a failed run attempt, the job waits this long instead of being retried in a tight loop. */
const RETRY_AFTER_MS = 60_000;

/** Real, unref'd timers: the default of the scheduler and the heartbeat. */
export const realTimers: Timers = {
  set(fn, ms) {
    const handle = setTimeout(fn, ms);
    // The scheduler alone must not keep a process (a CLI command, a test) alive.
    handle.unref();
    return handle;
  },
  clear(handle) {
    clearTimeout(handle as NodeJS.Timeout);
  },
};

/**
 * Fires due cron jobs into the bus. One timer sleeps until the earliest job (capped); each run
 * enters the bus as an inbound system message in the same SQLite transaction that advances or
 * removes the job, so a crash either leaves the job due (it fires after the restart) or leaves
 * the run in the inbox (the restart re-runs it) — never neither, and never both.
 */
export class Scheduler {
  private readonly now: () => number;
  private readonly timers: Timers;
  private readonly maxSleepMs: number;
  private handle: unknown;
  private running = false;
  private channels?: readonly ChannelName[];

  constructor(private readonly deps: SchedulerDeps) {
    this.now = deps.now ?? Date.now;
    this.timers = deps.timers ?? realTimers;
    this.maxSleepMs = deps.maxSleepMs ?? 60_000;
  }

  /**
   * Fires what came due while pincer was down (once per job), then keeps time. With `channels`,
   * only jobs whose conversation lives on one of them: a process without the Telegram channel
   * (say `pincer chat`) leaves Telegram reminders to the daemon that can deliver them.
   */
  start(channels?: readonly ChannelName[]): void {
    this.running = true;
    this.channels = channels;
    this.tick();
  }

  stop(): void {
    this.running = false;
    if (this.handle !== undefined) this.timers.clear(this.handle);
    this.handle = undefined;
  }

  /** Re-reads the jobs and re-arms the timer: call after adding or removing a job. */
  wake(): void {
    if (this.running) this.tick();
  }

  /** Fires every due job now; returns how many runs entered the bus. */
  runDue(): number {
    const now = this.now();
    let published = 0;
    for (const job of this.deps.store.due(now, this.channels)) {
      try {
        if (this.fire(job, now)) published++;
      } catch (err) {
        this.deps.log.error({ err, jobId: job.id }, "could not run a scheduled job; retrying later");
        this.deps.store.advance(job.id, now + RETRY_AFTER_MS);
      }
    }
    return published;
  }

  private tick(): void {
    if (this.handle !== undefined) this.timers.clear(this.handle);
    this.handle = undefined;
    // A failing database (SQLITE_BUSY from another process, a full disk) must not stop time: the
    // timer is re-armed whatever happens, and a failed tick is tried again shortly.
    let wait = Math.min(RETRY_TICK_MS, this.maxSleepMs);
    try {
      this.runDue();
      const earliest = this.deps.store.earliestNextRun(this.channels);
      wait = earliest === undefined ? this.maxSleepMs : Math.max(0, Math.min(earliest - this.now(), this.maxSleepMs));
    } catch (err) {
      this.deps.log.error({ err }, "the scheduler could not read its jobs; trying again shortly");
    } finally {
      if (this.running) this.handle = this.timers.set(() => this.tick(), wait);
    }
  }

  /** One run of one job, all or nothing. Returns false when nothing was published. */
  private fire(due: CronJob, now: number): boolean {
    const { store, bus, inbox, log } = this.deps;
    return store.atomically((): boolean => {
      // Re-read inside the transaction: another process may have removed or advanced the job.
      const job = store.get(due.id);
      if (!job || job.nextRunAt !== due.nextRunAt) return false;
      if (!job.owner || !this.deps.ownerHasAccess(job.owner)) {
        // Paused, not deleted: `pincer pairing approve` gives the owner their jobs back.
        log.warn(
          { jobId: job.id, owner: job.owner },
          job.owner
            ? "the job's owner no longer has access; the job is paused"
            : "the job has no recorded owner (it predates owners); the job is paused",
        );
        store.pause(job.id, now);
        return false;
      }
      const scheduledAt = job.nextRunAt;
      const recurring = job.schedule.kind !== "at";
      const following = recurring ? nextRun(job.schedule, new Date(Math.max(now, scheduledAt))) : null;

      const previous = job.lastDeliveryId && {
        channel: "system" as const,
        chatId: job.origin.chatId,
        id: job.lastDeliveryId,
      };
      if (recurring && previous && inbox.isPending(previous)) {
        // The previous run has not finished its turn: this slot is folded into it, never run beside it.
        log.info({ jobId: job.id, scheduledAt }, "previous run still pending; skipping this slot");
        if (following) store.advance(job.id, following.getTime());
        else store.remove(job.id);
        return false;
      }

      const id = deliveryId(job.id, scheduledAt);
      if (following) store.advance(job.id, following.getTime(), { at: now, deliveryId: id });
      else store.remove(job.id);
      const accepted = bus.publishInbound(runMessage(job, scheduledAt, now));
      log.info({ jobId: job.id, scheduledAt, lateMs: now - scheduledAt, replay: !accepted }, "scheduled job fired");
      return accepted;
    });
  }
}
