import type { Logger } from "pino";
import type { Switchboard } from "../bus/switchboard.js";
import type { InboundMessage } from "../bus/types.js";
import { coalesced } from "../coalesced.js";
import type { CronJob, JobOwner, Store } from "../store/store.js";
import { periodsAt } from "../usage/periods.js";
import { runId, runMessage } from "./run-message.js";
import { dayCapReached, effectiveLimits, type JobDefaults, planSlot } from "./stop-rules.js";

export interface SchedulerDeps {
  store: Store["jobs"];
  bus: Switchboard;
  inbox: { isPending(msg: Pick<InboundMessage, "channel" | "chatId" | "id">): Promise<boolean> };
  log: Logger;
  /** A job runs only while its creator may still talk to pincer (the access gate). */
  ownerHasAccess: (owner: JobOwner) => Promise<boolean>;
  /** The longest the timer sleeps, so a wall-clock jump or a job added by another process is noticed. */
  maxSleepMs?: number;
  /** The runs' store: a day's cap reads what a job spent today, and a slot skipped at it is recorded. */
  runs?: Pick<Store["jobRuns"], "ofJob" | "record">;
  defaults?: JobDefaults;
  now?: () => number;
}

/** After a tick that failed as a whole (the database was busy), the next try comes this soon. */
const RETRY_TICK_MS = 5_000;
/** After a failed run attempt, the job waits this long instead of being retried in a tight loop. */
const RETRY_AFTER_MS = 60_000;

/** Fires due cron jobs into the bus on one unref'd timer (it must not keep a CLI command alive). A run enters the inbox
 * in the transaction that advances or removes its job, so a crash leaves either the job due or the run in the inbox
 * (fired or re-run after the restart): never neither, and never both. */
export class Scheduler {
  private handle?: NodeJS.Timeout;
  private running = false;
  // One tick at a time: a wake() during a tick runs another right after it.
  private readonly ticks = coalesced(async () => {
    clearTimeout(this.handle);
    if (this.running) await this.tickOnce();
  });
  /** Routes (routeOf) of the bots running here. */
  private channels?: readonly string[];

  constructor(private readonly deps: SchedulerDeps) {}

  /** Fires what came due while pincer was down (once per job), then keeps time. With `channels`, only jobs of their
   * conversations: a process without Telegram (`pincer chat`) leaves its reminders to the daemon. */
  start(channels?: readonly string[]): void {
    this.running = true;
    this.channels = channels;
    this.ticks.run();
  }

  stop(): void {
    this.running = false;
    clearTimeout(this.handle);
  }

  /** Re-reads the jobs and re-arms the timer: call after adding or removing a job. */
  wake(): void {
    if (this.running) this.ticks.run();
  }

  /** Fires every due job now (and every run asked for); returns how many runs entered the bus. */
  async runDue(): Promise<number> {
    const now = this.now();
    let published = 0;
    for (const job of await this.deps.store.due(now, this.channels)) {
      try {
        if (job.runRequestedAt !== undefined && (await this.fireRequested(job, now))) published++;
        if (job.pausedAt === undefined && job.nextRunAt <= now && (await this.fire(job, now))) published++;
      } catch (err) {
        this.deps.log.error({ err, jobId: job.id }, "could not run a scheduled job; retrying later");
        await this.deps.store.postpone(job.id, now + RETRY_AFTER_MS);
      }
    }
    return published;
  }

  private now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  private async tickOnce(): Promise<void> {
    // A failing database (SQLITE_BUSY, a full disk) must not stop time: the timer is re-armed whatever happens.
    const maxSleepMs = this.deps.maxSleepMs ?? 60_000;
    let wait = Math.min(RETRY_TICK_MS, maxSleepMs);
    try {
      await this.runDue();
      const earliest = await this.deps.store.earliestNextRun(this.channels);
      wait = earliest === undefined ? maxSleepMs : Math.max(0, Math.min(earliest - this.now(), maxSleepMs));
    } catch (err) {
      this.deps.log.error({ err }, "the scheduler could not read its jobs; trying again shortly");
    } finally {
      if (this.running) this.handle = setTimeout(() => this.ticks.run(), wait).unref();
    }
  }

  /** Whether the job's owner may still have it run; pauses it (until an approval) when not. */
  private async ownerMayRun(job: CronJob, now: number): Promise<boolean> {
    if (job.owner && (await this.deps.ownerHasAccess(job.owner))) return true;
    // Paused, not deleted: `pincer pairing approve` gives the owner their jobs back.
    this.deps.log.warn(
      { jobId: job.id, owner: job.owner },
      job.owner
        ? "the job's owner no longer has access; the job is paused"
        : "the job has no recorded owner (it predates owners); the job is paused",
    );
    await this.deps.store.pause(job.id, now);
    return false;
  }

  /** A run someone asked for (Run now, `pincer cron run`), in whichever process they asked: one run, off schedule. */
  private async fireRequested(due: CronJob, now: number): Promise<boolean> {
    const { store, bus, log } = this.deps;
    const job = await store.get(due.id);
    const requestedAt = job?.runRequestedAt;
    if (!job || requestedAt === undefined) return false;
    // Asked for a job whose owner lost access: the ask goes (it is not retried every tick), the job is paused.
    if (!(await this.ownerMayRun(job, now))) {
      await store.dropRunRequest(job.id, requestedAt);
      return false;
    }
    const run = runMessage(job, requestedAt, now, "manual");
    if (!(await store.takeRunRequest(job.id, requestedAt, run, now))) return false;
    bus.requeueInbound(run);
    log.info({ jobId: job.id }, "job run on request");
    return true;
  }

  /** One run of one job, decided on a fresh read; the store then takes the slot (with the run's entry into the inbox)
   * only if the job is still where it was read (no other process took it). False when nothing was published. */
  private async fire(due: CronJob, now: number): Promise<boolean> {
    const { store, bus, inbox, log, runs } = this.deps;
    const job = await store.get(due.id);
    if (!job || job.nextRunAt !== due.nextRunAt || job.pausedAt !== undefined) return false;
    if (!(await this.ownerMayRun(job, now))) return false;
    const scheduledAt = job.nextRunAt;
    const limits = effectiveLimits(job, this.deps.defaults ?? {});
    const plan = planSlot(job, limits, now);
    if (plan.kind === "over") {
      log.info({ jobId: job.id, why: plan.why }, "the job is over; removing it");
      await store.takeSlot({ jobId: job.id, scheduledAt, nextRunAt: null });
      return false;
    }
    const { nextRunAt } = plan;
    const previous = { channel: "system" as const, chatId: job.origin.chatId, id: job.lastDeliveryId ?? "" };
    if (job.schedule.kind !== "at" && job.lastDeliveryId && (await inbox.isPending(previous))) {
      // The previous run has not finished its turn: this slot is folded into it, never run beside it.
      log.info({ jobId: job.id, scheduledAt }, "previous run still pending; skipping this slot");
      await store.takeSlot({ jobId: job.id, scheduledAt, nextRunAt });
      return false;
    }
    const capped = runs && (await dayCapReached(limits, () => runs.ofJob(job.id, periodsAt(now, job.tz).dayStart)));
    if (capped) {
      log.info({ jobId: job.id, scheduledAt, why: capped }, "a day's cap is reached; skipping this slot");
      if ((await store.takeSlot({ jobId: job.id, scheduledAt, nextRunAt })).taken) {
        await runs?.record({
          id: runId(job.id, scheduledAt, "schedule"),
          jobId: job.id,
          sessionKey: job.origin.sessionKey,
          trigger: "schedule",
          scheduledAt,
          firedAt: now,
          finishedAt: now,
          outcome: "skipped",
          promptTokens: 0,
          completionTokens: 0,
          toolCalls: 0,
          reason: `not run: ${capped}`,
          message: job.message,
        });
      }
      return false;
    }

    const run = runMessage(job, scheduledAt, now);
    const slot = await store.takeSlot({ jobId: job.id, scheduledAt, nextRunAt, run, ranAt: now });
    if (!slot.taken) return false;
    if (slot.accepted) bus.requeueInbound(run);
    log.info({ jobId: job.id, scheduledAt, lateMs: now - scheduledAt, replay: !slot.accepted }, "scheduled job fired");
    return slot.accepted;
  }
}
