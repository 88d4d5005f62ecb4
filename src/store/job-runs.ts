import { camelCased, insert, placeholders, SqlGroup } from "./sql.js";
import type { JobRun, JobRunEnd } from "./types.js";

/** Tokens and cost of model calls, as summed from the usage rows. */
type RunSpend = Record<"tokens" | "cost", number>;

const SPEND = `coalesce(sum(prompt_tokens + completion_tokens), 0) AS tokens, coalesce(sum(cost), 0) AS cost`;
const used = (sum: string) => `(SELECT ${sum} FROM model_usage WHERE run_id = job_runs.id)`;
const USED = `prompt_tokens = ${used("coalesce(sum(prompt_tokens), 0)")},
  completion_tokens = ${used("coalesce(sum(completion_tokens), 0)")}, cost = ${used("sum(cost)")}`;
/** Where a delivered text or a reason is cut: the runs are a history, not a copy of the chat. */
const TEXT_CHARS = 2000;

/** The runs of jobs: one row per run, made when it fires and finished when its turn ends (config retention). */
export class SqlJobRuns extends SqlGroup {
  /** Finishes a run and counts its job's failures in a row, in one transaction: a failure adds one (the one reaching
   * `pauseAfter` pauses the job: `pausedNow`), an ok run clears them. Nothing for a run unknown or finished already
   * (`interrupted` is no end: another process may have set it between this turn's end and this call). */
  finish(runId: string, end: JobRunEnd, pauseAfter: number) {
    return this.db.transaction(async (tx) => {
      const [run] = await tx.rows<{ jobId: string }>(
        `UPDATE job_runs SET finished_at = $1, outcome = $2, ${USED}, tool_calls = $3, delivered = $4, reason = $5
          WHERE id = $6 AND outcome IN ('running', 'interrupted') RETURNING job_id AS "jobId"`,
        [
          end.at,
          end.outcome,
          end.toolCalls,
          end.delivered?.slice(0, TEXT_CHARS) ?? null,
          end.reason?.slice(0, TEXT_CHARS) ?? null,
          runId,
        ],
      );
      if (!run) return { recorded: false, pausedNow: false };
      if (end.outcome === "ok") await tx.run("UPDATE cron_jobs SET failures = 0 WHERE id = $1", [run.jobId]);
      if (end.outcome !== "failed") return { recorded: true, jobId: run.jobId, pausedNow: false };
      await tx.run("UPDATE cron_jobs SET failures = failures + 1 WHERE id = $1", [run.jobId]);
      const paused = await tx.run(
        `UPDATE cron_jobs SET paused_at = $1, paused_reason = 'failures'
          WHERE id = $2 AND failures >= $3 AND paused_at IS NULL`,
        [end.at, run.jobId, pauseAfter],
      );
      return { recorded: true, jobId: run.jobId, pausedNow: paused === 1 };
    });
  }

  /** A run that never reached the model (a slot skipped at a cap), recorded as it is. */
  record = (run: JobRun) => this.db.run(...insert("job_runs", run, undefined, "ON CONFLICT (id) DO NOTHING"));

  /** The newest `perJob` runs of each job, newest first. */
  recent = (jobIds: readonly string[], perJob = 20) =>
    this.ranked(`job_id IN (${placeholders(jobIds, 2)})`, [perJob, ...jobIds], new Map(jobIds.map((id) => [id, []])));

  /** The newest `perJob` runs of each job that is gone (a finished one-time reminder, a deleted job), newest first. */
  ofEndedJobs = (perJob = 20) => this.ranked("job_id NOT IN (SELECT id FROM cron_jobs)", [perJob], new Map());

  private async ranked(where: string, params: unknown[], runs: Map<string, JobRun[]>) {
    const rows = await this.db.rows(
      `SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY job_id ORDER BY fired_at DESC, id DESC) AS n
          FROM job_runs WHERE ${where}) ranked WHERE n <= $1 ORDER BY fired_at DESC, id DESC`,
      params,
    );
    for (const row of rows) {
      const { n: _n, ownerId: _owner, ...run } = camelCased<JobRun & { n: number; ownerId: unknown }>(row);
      runs.set(run.jobId, [...(runs.get(run.jobId) ?? []), run]);
    }
    return runs;
  }

  /** Closes as `interrupted` the runs left `running` whose message no longer waits in the inbox (their process died
   * after the turn, or /stop, /new set it aside); one still waiting is resumed and ends itself. Returns how many. */
  closeLeftOver(at = Date.now()): Promise<number> {
    return this.db.run(
      `UPDATE job_runs SET outcome = 'interrupted', finished_at = $1, reason = $2, ${USED}
        WHERE outcome = 'running' AND NOT EXISTS (SELECT 1 FROM inbox WHERE inbox.session_key = job_runs.session_key
          AND inbox.status = 'pending' AND inbox.id LIKE '%:' || job_runs.id)`,
      [at, "the run's end was not recorded: the process running it stopped (or /stop or /new set the run aside)"],
    );
  }

  /** What one run's model calls have used so far. */
  ofRun = async (runId: string) =>
    (await this.db.rows<RunSpend>(`SELECT ${SPEND} FROM model_usage WHERE run_id = $1`, [runId]))[0];

  /** What a job's runs have used since `since` (a day's start). */
  async ofJob(jobId: string, since: number): Promise<RunSpend> {
    const [spent] = await this.db.rows<RunSpend>(
      `SELECT ${SPEND} FROM model_usage
        WHERE created_at >= $2 AND run_id IN (SELECT id FROM job_runs WHERE job_id = $1 AND fired_at >= $3)`,
      // A run that fired the day before may still have spent today: a day of slack on the runs' side.
      [jobId, since, since - 24 * 3600_000],
    );
    return spent;
  }
}
