import { replyTarget, routeOf } from "../bus/types.js";
import { isValidTimeZone } from "../config/config.js";
import { isScheduledRun } from "../scheduler/run-message.js";
import {
  compileCron,
  describeSchedule,
  formatSeconds,
  nextRun,
  parseIsoInZone,
  ScheduleError,
} from "../scheduler/schedule.js";
import { shortestInterval } from "../scheduler/schedule-text.js";
import type { CronJob, JobOrigin, Schedule } from "../store/store.js";
import { formatInZone } from "../time-zone.js";
import { integerParam, objectSchema, type Tool, type ToolContext, type ToolDeps, ToolError } from "./tool.js";

// A type alias, not an interface: it must fit the registry's Record<string, unknown> arguments.
type CronArgs = {
  action: "add" | "list" | "remove";
  message?: string;
  at?: string;
  every_seconds?: number;
  cron_expr?: string;
  tz?: string;
  job_id?: string;
  name?: string;
};

const DESCRIPTION = [
  "Schedule reminders and recurring jobs for this conversation; they are delivered here at the time, even across restarts.",
  "action=add needs `message` (what to tell or do at that time, written as the instruction to your future self, e.g. 'Remind the user to take the pizza out') and exactly one of:",
  "`at` (one time, ISO 8601 like 2025-06-01T09:30; without an offset it is local time in `tz` or the user's zone; for 'in 20 minutes' add 20 minutes to the current time),",
  "`every_seconds` (a fixed period), or `cron_expr` (5 fields 'min hour day month weekday', or 6 with seconds first; e.g. '30 8 * * 1-5' = weekdays 08:30).",
  "Optional: `tz` (IANA zone such as Europe/Berlin), `name` (a short label).",
  "The answer gives the job id and the next run; tell the user that time.",
  "action=list shows this conversation's jobs; action=remove needs `job_id` (from list).",
].join(" ");

export function createCronTool(deps: Pick<ToolDeps, "store" | "config" | "scheduler">): Tool<CronArgs> {
  const store = deps.store.jobs;
  async function add(args: CronArgs, ctx: ToolContext): Promise<string> {
    if (isScheduledRun(ctx.inbound)) {
      throw new ToolError(
        "this turn is a scheduled run, and scheduled runs may not create jobs (no runaway loops). Deliver the reminder instead; a recurring job repeats by itself.",
      );
    }
    const message = args.message?.trim();
    if (!message) throw new ToolError("action add needs `message`: what to remind the user of or do at that time.");
    const given = (["at", "every_seconds", "cron_expr"] as const).filter((k) => args[k] !== undefined);
    if (given.length !== 1) {
      throw new ToolError(
        given.length === 0
          ? "action add needs exactly one of `at` (one time), `every_seconds` (a fixed period) or `cron_expr` (a cron expression)."
          : `action add takes exactly one of at, every_seconds, cron_expr; got ${given.join(" and ")}.`,
      );
    }
    const tz = args.tz?.trim() || deps.config.timezone;
    if (!isValidTimeZone(tz))
      throw new ToolError(`tz "${args.tz}" is not an IANA time zone such as Europe/Berlin or America/New_York.`);
    // The conversation the job belongs to (thread included), and the person whose access it runs on.
    const origin: JobOrigin = { ...replyTarget(ctx.inbound), sessionKey: ctx.sessionKey, isGroup: ctx.inbound.isGroup };
    // Messages from pincer itself (helpers' results and the like) have no person behind them to own a job.
    if (ctx.inbound.channel === "system") {
      throw new ToolError("only a person can create a job; this turn was started by pincer itself, not by a message.");
    }
    // A runaway model should not fill the table: a person's jobs over all their chats are capped.
    const owner = { channel: routeOf(ctx.inbound), userId: ctx.inbound.senderId };
    const { maxJobsPerOwner } = deps.config.cron;
    if ((await store.listByOwner(owner)).length >= maxJobsPerOwner) {
      throw new ToolError(
        `this person already has ${maxJobsPerOwner} jobs, the most one person may have (config cron.maxJobsPerOwner); remove one first.`,
      );
    }
    const current = Date.now();
    const schedule = toSchedule(args, tz, current);
    const first = nextRun(schedule, new Date(current));
    if (!first) throw new ToolError(`the schedule never fires after now (${formatInZone(current, tz)}).`);
    checkInterval(schedule, current, deps.config.cron.minEverySeconds);
    const job = await store.add({
      name: args.name?.trim() || undefined,
      message,
      schedule,
      tz,
      origin,
      owner,
      createdAt: current,
      nextRunAt: first.getTime(),
    });
    deps.scheduler?.wake();
    return [
      `Scheduled job ${job.id}${job.name ? ` "${job.name}"` : ""}: ${describeSchedule(schedule, tz)}.`,
      `Next run: ${formatInZone(job.nextRunAt, tz)} (in ${formatSeconds(Math.max(1, Math.round((job.nextRunAt - current) / 1000)))}).`,
      "It will be delivered in this conversation. Remove it with action=remove and this job_id.",
    ].join("\n");
  }
  async function list(_args: CronArgs, ctx: ToolContext): Promise<string> {
    const jobs = await store.listBySession(ctx.sessionKey);
    if (jobs.length === 0) return "No scheduled jobs in this conversation.";
    return [`Scheduled jobs in this conversation (${jobs.length}):`, ...jobs.map(jobLine)].join("\n");
  }
  async function remove(args: CronArgs, ctx: ToolContext): Promise<string> {
    const id = args.job_id?.trim();
    if (!id) throw new ToolError("action remove needs `job_id` (action list shows the ids).");
    const job = await store.get(id);
    if (!job || job.origin.sessionKey !== ctx.sessionKey || !(await store.remove(id, ctx.sessionKey))) {
      const ids = (await store.listBySession(ctx.sessionKey)).map((j) => j.id);
      throw new ToolError(
        `no job ${id} in this conversation. ${ids.length > 0 ? `Its jobs: ${ids.join(", ")}.` : "It has no jobs."}`,
      );
    }
    deps.scheduler?.wake();
    return `Removed job ${job.id}${job.name ? ` "${job.name}"` : ""} (${describeSchedule(job.schedule, job.tz)}: ${job.message}).`;
  }
  return {
    name: "cron",
    description: DESCRIPTION,
    parameters: objectSchema(["action"], {
      action: { type: "string", enum: ["add", "list", "remove"], description: "add, list or remove a job" },
      message: {
        type: "string",
        maxLength: 4000,
        description: "add: what to remind the user of or do when the job fires",
      },
      at: {
        type: "string",
        description: "add, one time: ISO 8601 date-time, e.g. 2025-06-01T09:30 or 2025-06-01T09:30+02:00",
      },
      every_seconds: integerParam(1, undefined, "add, repeating: the period in seconds"),
      cron_expr: { type: "string", description: "add, repeating: cron expression with 5 or 6 fields" },
      tz: { type: "string", description: "add: IANA time zone for `at` without offset and for `cron_expr`" },
      name: { type: "string", maxLength: 80, description: "add: a short label for the job" },
      job_id: { type: "string", description: "remove: the id of the job" },
    }),
    execute: (args, ctx) => ({ add, list, remove })[args.action](args, ctx),
  };
}

function toSchedule(args: CronArgs, tz: string, current: number): Schedule {
  try {
    if (args.at !== undefined) {
      const at = parseIsoInZone(args.at, tz);
      if (at <= current) {
        throw new ScheduleError(
          `at ${formatInZone(at, tz)} is in the past; it is now ${formatInZone(current, tz)}. Give a future time.`,
        );
      }
      return { kind: "at", at };
    }
    if (args.every_seconds !== undefined) return { kind: "every", everySeconds: args.every_seconds, anchor: current };
    const expr = (args.cron_expr ?? "").trim();
    compileCron(expr, tz);
    return { kind: "cron", expr, tz };
  } catch (err) {
    if (err instanceof ScheduleError) throw new ToolError(err.message);
    throw err;
  }
}

function checkInterval(schedule: Schedule, current: number, minSeconds: number): void {
  const interval = shortestInterval(schedule, new Date(current));
  if (interval !== null && interval < minSeconds * 1000) {
    const what =
      schedule.kind === "every" ? "every_seconds" : `cron_expr "${schedule.kind === "cron" ? schedule.expr : ""}"`;
    throw new ToolError(
      `${what} fires every ${formatSeconds(interval / 1000)}; the shortest period allowed is ${formatSeconds(minSeconds)} (config cron.minEverySeconds).`,
    );
  }
}

function jobLine(job: CronJob): string {
  const label = job.name ? ` "${job.name}"` : "";
  const paused = job.pausedAt === undefined ? "" : " (paused)";
  return `- ${job.id}${label}${paused}: ${describeSchedule(job.schedule, job.tz)}; next run ${formatInZone(job.nextRunAt, job.tz)}; message: ${job.message}`;
}
