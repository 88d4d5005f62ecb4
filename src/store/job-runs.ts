import { camelCased, insert, placeholders, SqlGroup } from "./sql.js";
import type { JobRun, JobRunEnd } from "./types.js";

/** Tokens and cost of model calls, as summed from the usage rows. */
export interface RunSpend {
  tokens: number;
  cost: number;
}

const SPEND = `coalesce(sum(prompt_tokens + completion_tokens), 0) AS tokens, coalesce(sum(cost), 0) AS cost`;
/** Where a delivered text or a reason is cut: the runs are a history, not a copy of the chat. */
const TEXT_CHARS = 2000;

/** The runs of jobs: one row per run, made when it fires and finished when its turn ends (config retention). */
export class SqlJobRuns extends SqlGroup {
  /**
   * Finishes a run (its tokens and cost summed from the usage rows its model calls left) and counts the job's failures
   * in a row, in one transaction: a failed run adds one, one that did not fail clears them, and the failure that
   * reaches `pauseAfter` pauses the job (`pausedNow`, once). Nothing when the run is unknown or finished already.
   */
  finish(runId: string, end: JobRunEnd, pauseAfter: number) {
    return this.db.transaction(async (tx) => {
      const [spent] = await tx.rows<{ prompt: number; completion: number; cost: number | null }>(
        `SELECT coalesce(sum(prompt_tokens), 0) AS prompt, coalesce(sum(completion_tokens), 0) AS completion,
                sum(cost) AS cost FROM model_usage WHERE run_id = $1`,
        [runId],
      );
      const [run] = await tx.rows<{ jobId: string }>(
        `UPDATE job_runs SET finished_at = $1, outcome = $2, prompt_tokens = $3, completion_tokens = $4, cost = $5,
                tool_calls = $6, delivered = $7, reason = $8
          WHERE id = $9 AND outcome = 'running' RETURNING job_id AS "jobId"`,
        [
          end.at,
          end.outcome,
          spent.prompt,
          spent.completion,
          spent.cost,
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
  async record(run: JobRun): Promise<void> {
    await this.db.run(...insert("job_runs", run, undefined, "ON CONFLICT (id) DO NOTHING"));
  }

  /** The newest `perJob` runs of each job, newest first. */
  async recent(jobIds: readonly string[], perJob = 20): Promise<Map<string, JobRun[]>> {
    const runs = new Map<string, JobRun[]>(jobIds.map((id) => [id, []]));
    if (jobIds.length === 0) return runs;
    const rows = await this.db.rows(
      `SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY job_id ORDER BY fired_at DESC, id DESC) AS n
          FROM job_runs WHERE job_id IN (${placeholders(jobIds, 2)})) ranked
        WHERE n <= $1 ORDER BY fired_at DESC, id DESC`,
      [perJob, ...jobIds],
    );
    for (const row of rows) {
      const { n: _n, ...run } = camelCased<JobRun & { n: number }>(row);
      runs.get(run.jobId)?.push(run);
    }
    return runs;
  }

  /** What one run's model calls have used so far. */
  async ofRun(runId: string): Promise<RunSpend> {
    const [row] = await this.db.rows<RunSpend>(`SELECT ${SPEND} FROM model_usage WHERE run_id = $1`, [runId]);
    return row;
  }

  /** What a job's runs have used since `since` (a day's start). */
  async ofJob(jobId: string, since: number): Promise<RunSpend> {
    const [row] = await this.db.rows<RunSpend>(
      `SELECT ${SPEND} FROM model_usage
        WHERE created_at >= $2 AND run_id IN (SELECT id FROM job_runs WHERE job_id = $1 AND fired_at >= $3)`,
      // A run that fired the day before may still have spent today: a day of slack on the runs' side.
      [jobId, since, since - 24 * 3600_000],
    );
    return row;
  }
}
