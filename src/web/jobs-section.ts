import { scheduleInWords, scheduleText, upcomingRuns } from "../scheduler/schedule-text.js";
import { LIMIT_NAMES, limitsText, limitValue } from "../scheduler/stop-rules.js";
import type { CronJob, JobRun, Store } from "../store/store.js";
import { LIMIT_FIELDS } from "../store/types.js";
import { clip } from "../text.js";
import { esc, formatSpan, postButton, type TimeFormat } from "./html.js";

const RUNS_SHOWN = 20;
const NEXT_SHOWN = 3;

/** Every job with its next and newest runs, then the runs kept of jobs that are gone (shown in `tz`). */
export async function collectJobs(store: Pick<Store, "jobs" | "jobRuns">, tz: string): Promise<JobView[]> {
  const jobs = await store.jobs.listAll();
  const ids = jobs.map((job) => job.id);
  const runs = await store.jobRuns.recent(ids, RUNS_SHOWN);
  const ended = [...(await store.jobRuns.ofEndedJobs(RUNS_SHOWN))].map(([id, runs]) => ({
    id,
    message: runs.find((run) => run.message)?.message ?? "(its text was not kept)",
    tz,
    sessionKey: runs[0].sessionKey,
    runs,
    ended: true,
  }));
  return [...jobs.map((job) => jobView(job, runs.get(job.id) ?? [])), ...ended];
}

const jobView = (job: CronJob, runs: JobRun[]) => ({
  id: job.id,
  name: job.name,
  message: job.message,
  words: scheduleInWords(job.schedule, job.tz),
  scheduleText: scheduleText(job.schedule, job.tz),
  tz: job.tz,
  sessionKey: job.origin.sessionKey,
  owner: job.owner ? `${job.owner.channel} ${job.owner.userId}` : "nobody (made before owners were kept)",
  nextRuns: job.pausedAt === undefined ? upcomingRuns(job.schedule, job.nextRunAt, NEXT_SHOWN) : [],
  paused: job.pausedAt === undefined ? undefined : (job.pausedReason ?? "owner"),
  runRequested: job.runRequestedAt !== undefined,
  limits: job.limits,
  runs,
});

/** A job as the page shows it; one that is gone (`ended`) has only its text and its runs. */
type JobView = Partial<ReturnType<typeof jobView>> &
  Pick<ReturnType<typeof jobView>, "id" | "message" | "tz" | "sessionKey" | "runs"> & { ended?: boolean };

const PAUSED: Record<string, string> = {
  user: "paused",
  owner: "paused: its owner lost access",
  failures: "paused: it failed too often in a row",
};

const act = (label: string, action: string, id: string, danger = false) =>
  postButton(label, `/api/jobs/${action}`, { id }, danger);

/** A row of the Jobs section: the job's text first, its history and its actions. */
export function jobRow(job: JobView, now: number, formatTime: TimeFormat): string {
  const time = (at: number) => esc(formatTime(at, job.tz));
  const state = job.ended
    ? '<span class="pill">finished or deleted</span>'
    : job.paused
      ? `<span class="pill warn">${esc(PAUSED[job.paused] ?? "paused")}</span>`
      : `next <span class="next">${(job.nextRuns ?? []).map(time).join(", ")}</span> <small>(${esc(job.tz)})</small>`;
  const last = job.runs[0];
  const limits = limitsText(job.limits ?? {}, job.tz);
  const about = job.ended
    ? `job ${esc(job.id)}`
    : `${job.name ? `“${esc(job.name)}” · ` : ""}${esc(job.words ?? "")} · owner ${esc(job.owner ?? "")}`;
  return `<li class="job" data-job="${esc(job.id)}"><div>
<b class="text">${esc(clip(job.message, 300))}</b>
<small>${about} · chat ${esc(job.sessionKey)}${limits && ` · stop rules: ${esc(limits)}`}</small>
<small>${state}${job.runRequested ? " · a run is asked for" : ""}${last ? ` · last run ${outcome(last)} ${formatSpan(now - last.firedAt)} ago` : " · no runs yet"}</small>
${history(job, time)}${job.ended ? "</div></li>" : editForm(job)}`;
}

function editForm(job: JobView): string {
  const limits = LIMIT_FIELDS.map(
    (f) =>
      `<label>${LIMIT_NAMES[f]} <input name="${f}" value="${esc(limitValue(job.limits ?? {}, f, job.tz))}"></label>`,
  );
  return `<form class="job-edit" data-id="${esc(job.id)}" hidden>
<label>Text <textarea name="message" rows="2" maxlength="4000" required>${esc(job.message)}</textarea></label>
<label>Schedule <input name="schedule" value="${esc(job.scheduleText ?? "")}" required></label>
<label>Zone <input name="tz" value="${esc(job.tz)}" required></label>
${limits.join("")}<small>Stop rules left empty: the config's <code>cron</code> defaults apply.</small>
<span class="buttons"><button type="submit">Save</button><button type="button" data-action="edit-job" data-id="${esc(job.id)}">Cancel</button></span>
<small class="error" role="alert"></small>
</form></div>
<span class="buttons">${act("Run now", "run", job.id)}${job.paused ? act("Resume", "resume", job.id) : act("Pause", "pause", job.id)}<button type="button" data-action="edit-job" data-id="${esc(job.id)}">Edit</button>${act("Delete", "delete", job.id, true)}</span></li>`;
}

function outcome(run: JobRun): string {
  const tone = run.outcome === "ok" ? "good" : run.outcome === "running" ? "warn" : "bad";
  return `<span class="pill ${tone}">${esc(run.outcome)}</span>`;
}

function history(job: JobView, time: (at: number) => string): string {
  if (job.runs.length === 0) return "";
  const row = (run: JobRun) => `<tr class="run">
<td>${time(run.firedAt)}${run.trigger === "manual" ? " <small>(run now)</small>" : ""}</td>
<td>${run.finishedAt === undefined ? "…" : `${((run.finishedAt - run.firedAt) / 1000).toFixed(1)} s`}</td><td>${outcome(run)}</td>
<td>${run.promptTokens + run.completionTokens}</td><td>${run.cost === undefined ? "no price" : `$${run.cost.toFixed(4)}`}</td>
<td>${run.toolCalls}</td><td>${esc(clip(run.delivered ?? run.reason ?? "", 200))}</td></tr>`;
  return `<details class="runs"><summary>History (${job.runs.length} run${job.runs.length === 1 ? "" : "s"})</summary>
<table class="usage"><tr><th>When</th><th>Took</th><th>Outcome</th><th>Tokens</th><th>Cost</th><th>Tool calls</th><th>Delivered, or why not</th></tr>${job.runs.map(row).join("")}</table></details>`;
}
