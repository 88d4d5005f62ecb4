import type { Config } from "../config/config.js";
import type { CronJob, JobLimits } from "../store/store.js";
import { nextRun } from "./schedule.js";

/** The config's `cron` stop rules every job gets unless it sets its own. */
export type JobDefaults = Pick<
  Config["cron"],
  "maxRuns" | "endAfterDays" | "runTokens" | "runCost" | "dayTokens" | "dayCost"
>;

const DAY_MS = 24 * 3600_000;

/** A job's stop rules: its own, else the config's (an end `endAfterDays` after the job was made). Pure. */
export function effectiveLimits(job: Pick<CronJob, "limits" | "createdAt">, defaults: JobDefaults): JobLimits {
  const { endAfterDays, ...rest } = defaults;
  const fromConfig: JobLimits = {
    ...rest,
    endsAt: endAfterDays === undefined ? undefined : job.createdAt + endAfterDays * DAY_MS,
  };
  const own = Object.entries(job.limits).filter(([, value]) => value !== undefined);
  return { ...withoutUndefined(fromConfig), ...Object.fromEntries(own) };
}

function withoutUndefined(limits: JobLimits): JobLimits {
  return Object.fromEntries(Object.entries(limits).filter(([, value]) => value !== undefined));
}

/** What the scheduler does with a job's due slot: the job is over (why), or it runs and then moves to `nextRunAt`
 * (null: this is its last run). Pure. */
export type SlotPlan = { kind: "over"; why: string } | { kind: "run"; nextRunAt: number | null };

export function planSlot(job: CronJob, limits: JobLimits, now: number): SlotPlan {
  const scheduledAt = job.nextRunAt;
  if (limits.maxRuns !== undefined && job.runCount >= limits.maxRuns) {
    return { kind: "over", why: `it has run ${job.runCount} of its ${limits.maxRuns} times` };
  }
  if (limits.endsAt !== undefined && scheduledAt > limits.endsAt) return { kind: "over", why: "its end date passed" };
  if (job.schedule.kind === "at") return { kind: "run", nextRunAt: null };
  const next = nextRun(job.schedule, new Date(Math.max(now, scheduledAt)))?.getTime() ?? null;
  const last =
    next === null ||
    (limits.maxRuns !== undefined && job.runCount + 1 >= limits.maxRuns) ||
    (limits.endsAt !== undefined && next > limits.endsAt);
  return { kind: "run", nextRunAt: last ? null : next };
}

/** Why a day's cap stops a job's next run (undefined: it may run). Pure. */
export function dayCapReached(limits: JobLimits, spentToday: { tokens: number; cost: number }): string | undefined {
  if (limits.dayTokens !== undefined && spentToday.tokens >= limits.dayTokens) {
    return `its runs used ${spentToday.tokens} of its ${limits.dayTokens} tokens for today`;
  }
  if (limits.dayCost !== undefined && spentToday.cost >= limits.dayCost) {
    return `its runs cost ${spentToday.cost.toFixed(4)} of its ${limits.dayCost} for today`;
  }
  return undefined;
}

/** Why a run must stop before its next model call (undefined: it may go on). Pure. */
export function runCapReached(limits: JobLimits, spentInRun: { tokens: number; cost: number }): string | undefined {
  if (limits.runTokens !== undefined && spentInRun.tokens >= limits.runTokens) {
    return `this run used ${spentInRun.tokens} tokens, its cap is ${limits.runTokens}`;
  }
  if (limits.runCost !== undefined && spentInRun.cost >= limits.runCost) {
    return `this run cost ${spentInRun.cost.toFixed(4)}, its cap is ${limits.runCost}`;
  }
  return undefined;
}
