import type { CronJob, JobRun, Store } from "../store/store.js";
import { formatInZone } from "../time-zone.js";
import { jobActions } from "./job-actions.js";
import { scheduleInWords, upcomingRuns } from "./schedule-text.js";
import { type LimitInput, limitsText } from "./stop-rules.js";

type CliStore = Pick<Store, "jobs" | "jobRuns">;
type CliAnswer = { ok: boolean; text: string };

const PAUSED = { user: "someone paused it", owner: "its owner lost access", failures: "it failed too often in a row" };

/** `pincer cron list` (`--json`): every job of every conversation, soonest first. */
export async function listJobsText(store: Store["jobs"], json = false): Promise<string> {
  const jobs = await store.listAll();
  if (json) return JSON.stringify(jobs, null, 2);
  if (jobs.length === 0) return "No scheduled jobs.";
  return [`${jobs.length} scheduled job${jobs.length === 1 ? "" : "s"}:`, ...jobs.map(jobLines)].join("\n");
}

function jobLines(job: CronJob): string {
  return [
    `  ${job.id}${job.name ? ` "${job.name}"` : ""}  ${job.origin.sessionKey}`,
    `    ${scheduleInWords(job.schedule, job.tz)}`,
    `    owner: ${job.owner ? `${job.owner.channel} ${job.owner.userId}` : "unknown (created before owners were recorded; it does not run)"}`,
    job.pausedAt === undefined
      ? `    next run: ${formatInZone(job.nextRunAt, job.tz)}`
      : `    paused since ${formatInZone(job.pausedAt, job.tz)} (${PAUSED[job.pausedReason ?? "owner"]})`,
    `    message: ${job.message}`,
  ].join("\n");
}

/** `pincer cron show ID` (`--json`): one job, its next runs and its newest runs. */
export async function showJobText(store: CliStore, id: string, json = false): Promise<CliAnswer> {
  const job = await store.jobs.get(id);
  if (!job) return { ok: false, text: json ? "null" : `No job ${id} (pincer cron list shows the ids).` };
  const runs = (await store.jobRuns.recent([id], 50)).get(id) ?? [];
  const next = job.pausedAt === undefined ? upcomingRuns(job.schedule, job.nextRunAt, 5) : [];
  if (json) return { ok: true, text: JSON.stringify({ ...job, upcoming: next, runs }, null, 2) };
  const limits = limitsText(job.limits, job.tz);
  return {
    ok: true,
    text: [
      jobLines(job).replace(/^ {2}/gm, ""),
      `  runs so far: ${job.runCount}; failures in a row: ${job.failures}${limits && `; stop rules: ${limits}`}`,
      ...(next.length ? ["  next runs:", ...next.map((at) => `    ${formatInZone(at, job.tz)}`)] : []),
      runs.length ? "  newest runs:" : "  no runs yet",
      ...runs.map((run) => `    ${runLine(run, job.tz)}`),
    ].join("\n"),
  };
}

function runLine(run: JobRun, tz: string): string {
  const took = run.finishedAt === undefined ? "running" : `${((run.finishedAt - run.firedAt) / 1000).toFixed(1)} s`;
  const cost = run.cost === undefined ? "no price" : `$${run.cost.toFixed(4)}`;
  const what = run.delivered ?? run.reason ?? "";
  return `${formatInZone(run.firedAt, tz)}${run.trigger === "manual" ? " (run now)" : ""}: ${run.outcome}, ${took}, ${run.promptTokens + run.completionTokens} tokens, ${cost}, ${run.toolCalls} tool calls${what ? ` — ${what.replace(/\s+/g, " ").slice(0, 200)}` : ""}`;
}

/** `pincer cron pause|resume|run|remove|limit ID`: a write the running daemon's scheduler obeys (within seconds). */
export async function jobCommand(
  store: Pick<Store, "jobs">,
  action: "pause" | "resume" | "run" | "remove" | "limit",
  id: string,
  rules: LimitInput = {},
): Promise<CliAnswer> {
  // The daemon's minimum period does not matter here: the CLI does not edit schedules.
  const actions = jobActions({ jobs: store.jobs, minEverySeconds: 1 });
  const result = action === "limit" ? await actions.limit(id, rules) : await actions[action](id);
  if (!result.ok && result.status === 404) return { ok: false, text: `No job ${id} (pincer cron list shows the ids).` };
  return result;
}
