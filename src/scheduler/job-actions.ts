import { isValidTimeZone } from "../config/config.js";
import type { CronJob, JobEdit, Schedule, Store } from "../store/store.js";
import { formatInZone } from "../time-zone.js";
import { formatSeconds, nextRun, ScheduleError } from "./schedule.js";
import { parseScheduleText, scheduleText, shortestInterval } from "./schedule-text.js";
import { type LimitInput, limitsText, withLimits } from "./stop-rules.js";

export interface JobActionDeps {
  jobs: Store["jobs"];
  /** Config cron.minEverySeconds: an edit may not make a job fire more often. */
  minEverySeconds: number;
  /** Re-arms this process's scheduler (when it runs here); the one of another process reads the change itself. */
  wake?: () => void;
  now?: () => number;
}

/** What an action did, in a sentence for the person who asked; `status` says why it did not (for the page). */
export type ActionResult = { ok: true; text: string } | { ok: false; status: 400 | 404 | 409; text: string };

/** The changes the page, the chat's buttons and the CLI make to a job. Every one is a write to the store, so the
 * scheduler of whichever process holds it obeys (a run asked for is fired by it, once). */
export type JobActions = ReturnType<typeof jobActions>;

export function jobActions(deps: JobActionDeps) {
  const { jobs } = deps;
  const now = () => deps.now?.() ?? Date.now();
  const missing = (id: string): ActionResult => ({ ok: false, status: 404, text: `No job ${id}.` });
  const done = (text: string): ActionResult => {
    deps.wake?.();
    return { ok: true, text };
  };

  /** The action on the job `id` names, or 404 when there is none. */
  const onJob =
    <A extends unknown[]>(act: (job: CronJob, ...args: A) => Promise<ActionResult>) =>
    async (id: string, ...args: A): Promise<ActionResult> => {
      const job = await jobs.get(id);
      return job ? act(job, ...args) : missing(id);
    };

  return {
    pause: onJob(async (job) => {
      if (!(await jobs.pause(job.id, now(), "user")))
        return { ok: false, status: 409, text: `${label(job)} is paused already.` };
      return done(`Paused ${label(job)}. It does not run until it is resumed.`);
    }),

    resume: onJob(async (job) => {
      const at = resumeAt(job.schedule, now());
      if (!(await jobs.resume(job.id, at))) return { ok: false, status: 409, text: `${label(job)} is not paused.` };
      return done(`Resumed ${label(job)}. Next run: ${formatInZone(at, job.tz)}.`);
    }),

    run: onJob(async (job) => {
      if (!(await jobs.requestRun(job.id, now()))) return missing(job.id);
      return done(`${label(job)} runs now; what it delivers goes to ${job.origin.sessionKey}.`);
    }),

    remove: onJob(async (job) => {
      if (!(await jobs.remove(job.id))) return missing(job.id);
      return done(`Deleted ${label(job)}.`);
    }),

    /** New text, schedule (as parseScheduleText reads it), zone and stop rules; an unchanged schedule keeps its place. */
    edit: onJob(async (job, input: EditInput) => {
      const checked = checkEdit(job, input, now(), deps.minEverySeconds);
      if (typeof checked === "string") return { ok: false, status: 400, text: checked };
      if (!(await jobs.edit(job.id, checked))) return missing(job.id);
      return done(`Saved ${label(job)}. Next run: ${formatInZone(checked.nextRunAt, checked.tz)}.`);
    }),

    /** Sets the stop rules given (`pincer cron limit`), keeping the others. */
    limit: onJob(async (job, input: LimitInput) => {
      const limits = withLimits(job.limits, input, job.tz, now());
      if (typeof limits === "string") return { ok: false, status: 400, text: limits };
      if (!(await jobs.setLimits(job.id, limits))) return missing(job.id);
      return done(
        `Stop rules of ${label(job)}: ${limitsText(limits, job.tz) || "none of its own (the config's apply)"}.`,
      );
    }),
  };
}

/** A job as a person names it: its name, or its id. */
export function label(job: Pick<CronJob, "id" | "name">): string {
  return job.name ? `job "${job.name}" (${job.id})` : `job ${job.id}`;
}

/** A resumed job's next run: its next slot from now; a one-time job whose time passed while paused runs now. Pure. */
export function resumeAt(schedule: Schedule, now: number): number {
  return nextRun(schedule, new Date(now))?.getTime() ?? now;
}

type EditInput = { message: string; schedule: string; tz: string; limits?: LimitInput };

/** The edit as the store takes it, or the sentence saying what is wrong with it. Pure. */
export function checkEdit(job: CronJob, input: EditInput, now: number, minEverySeconds: number): JobEdit | string {
  const message = input.message.trim();
  if (!message || message.length > 4000) return "The text must have 1 to 4000 characters.";
  const tz = input.tz.trim();
  if (!isValidTimeZone(tz)) return `"${input.tz}" is not an IANA time zone such as Europe/Berlin.`;
  let schedule: Schedule;
  try {
    // Unchanged (same words, same zone): the job keeps its schedule, and a period its anchor.
    const same = input.schedule.trim() === scheduleText(job.schedule, job.tz) && tz === job.tz;
    schedule = same ? job.schedule : parseScheduleText(input.schedule, tz, now);
  } catch (err) {
    if (err instanceof ScheduleError) return `The schedule: ${err.message}`;
    throw err;
  }
  const interval = shortestInterval(schedule, new Date(now));
  if (interval !== null && interval < minEverySeconds * 1000) {
    return `It would run every ${formatSeconds(interval / 1000)}; the shortest period allowed is ${formatSeconds(minEverySeconds)} (config cron.minEverySeconds).`;
  }
  const next = nextRun(schedule, new Date(now));
  if (!next) return `The schedule never runs after now (${formatInZone(now, tz)}).`;
  const limits = input.limits && withLimits(job.limits, input.limits, tz, now);
  if (typeof limits === "string") return limits;
  return { message, schedule, tz, nextRunAt: next.getTime(), limits };
}
