import type { Config } from "../config/config.js";
import type { CronJob, JobLimits } from "../store/store.js";
import { LIMIT_FIELDS } from "../store/types.js";
import { nextRun, parseIsoInZone } from "./schedule.js";
import { scheduleText } from "./schedule-text.js";

/** The config's `cron` stop rules every job gets unless it sets its own. */
export type JobDefaults = Pick<
  Config["cron"],
  "maxRuns" | "endAfterDays" | "runTokens" | "runCost" | "dayTokens" | "dayCost"
>;

const DAY_MS = 24 * 3600_000;

/** A job's stop rules: its own, else the config's (an end `endAfterDays` after the job was made). Pure. */
export function effectiveLimits(job: Pick<CronJob, "limits" | "createdAt">, defaults: JobDefaults): JobLimits {
  const { endAfterDays, ...rest } = defaults;
  const endsAt = endAfterDays === undefined ? undefined : job.createdAt + endAfterDays * DAY_MS;
  return { ...withoutUndefined({ ...rest, endsAt }), ...withoutUndefined(job.limits) };
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

type Spent = { tokens: number; cost: number };

/** Why a day's cap stops a job's next run (undefined: it may run); `spentToday` is read only when the job has one. */
export async function dayCapReached(limits: JobLimits, spentToday: () => Promise<Spent>): Promise<string | undefined> {
  const { dayTokens, dayCost } = limits;
  if (dayTokens === undefined && dayCost === undefined) return undefined;
  const { tokens, cost } = await spentToday();
  if (dayTokens !== undefined && tokens >= dayTokens)
    return `its runs used ${tokens} of its ${dayTokens} tokens for today`;
  if (dayCost !== undefined && cost >= dayCost) return `its runs cost ${cost.toFixed(4)} of its ${dayCost} for today`;
}

/** Why a run must stop before its next model call (undefined: it may go on); `spentInRun` is read only for a cap. */
export async function runCapReached(limits: JobLimits, spentInRun: () => Promise<Spent>): Promise<string | undefined> {
  const { runTokens, runCost } = limits;
  if (runTokens === undefined && runCost === undefined) return undefined;
  const { tokens, cost } = await spentInRun();
  if (runTokens !== undefined && tokens >= runTokens) return `this run used ${tokens} tokens, its cap is ${runTokens}`;
  if (runCost !== undefined && cost >= runCost) return `this run cost ${cost.toFixed(4)}, its cap is ${runCost}`;
}

/** Stop rules as a person types them (the page's Edit form, `pincer cron limit`): a field given replaces the job's own
 * rule, an empty one or `none` removes it (the config's default applies again). */
export type LimitInput = Partial<Record<keyof JobLimits, string>>;

export const LIMIT_NAMES: Record<keyof JobLimits, string> = {
  maxRuns: "At most runs",
  endsAt: "Ends at",
  runTokens: "Tokens per run",
  runCost: "Cost per run",
  dayTokens: "Tokens per day",
  dayCost: "Cost per day",
};

/** The job's own stop rules with `input` applied, or the sentence saying what is wrong (an end date is read in `tz`,
 * and must be after `now`). Pure. */
export function withLimits(current: JobLimits, input: LimitInput, tz: string, now: number): JobLimits | string {
  const limits: JobLimits = { ...current };
  for (const field of LIMIT_FIELDS) {
    const text = input[field]?.trim();
    if (text === undefined) continue;
    delete limits[field];
    if (text === "" || text.toLowerCase() === "none") continue;
    if (field === "endsAt") {
      try {
        limits.endsAt = parseIsoInZone(text, tz);
      } catch {
        return `Ends at: "${text}" is not a date-time such as 2026-12-31T18:00.`;
      }
      if (limits.endsAt <= now) return `Ends at: ${text} (${tz}) is not in the future.`;
      continue;
    }
    const value = Number(text);
    const whole = field === "maxRuns" || field.endsWith("Tokens");
    if (!(value > 0) || !Number.isFinite(value) || (whole && !Number.isInteger(value))) {
      return `${LIMIT_NAMES[field]} must be ${whole ? "a whole number" : "a number"} above 0 (or none); got "${text}".`;
    }
    limits[field] = value;
  }
  return limits;
}

/** A rule's value as a person types it (an end as a date-time in `tz`); "" when unset. Pure. */
export function limitValue(limits: JobLimits, field: keyof JobLimits, tz: string): string {
  const value = limits[field];
  return value === undefined ? "" : field === "endsAt" ? scheduleText({ kind: "at", at: value }, tz) : String(value);
}

/** The rules a job sets itself, as `maxRuns 3, endsAt 2026-12-31T18:00`. Pure. */
export const limitsText = (limits: JobLimits, tz: string): string =>
  LIMIT_FIELDS.filter((f) => limits[f] !== undefined)
    .map((f) => `${f} ${limitValue(limits, f, tz)}`)
    .join(", ");
