import type { Model } from "../llm/model.js";
import type { Store } from "../store/store.js";
import { UsageLimitError } from "../usage/meter.js";
import { periodsAt } from "../usage/periods.js";
import { dayCapReached, effectiveLimits, type JobDefaults, runCapReached } from "./stop-rules.js";

/** The model as a scheduled run may use it: before each call (a runaway job loops on tool calls), the job's caps per
 * run and per day are checked; a cap reached stops the run with a notice. Other runs get the model as it is. */
export function guardedForRun(
  model: Model,
  run: { runId?: string },
  deps: { store: Pick<Store, "jobs" | "jobRuns">; defaults: JobDefaults; now?: () => number },
): Model {
  const { runId } = run;
  const jobId = runId && /^cron:([^:]+):/.exec(runId)?.[1];
  if (!runId || !jobId) return model;
  return {
    complete: async (request) => {
      const job = await deps.store.jobs.get(jobId);
      if (job) {
        const limits = effectiveLimits(job, deps.defaults);
        const { dayStart } = periodsAt(deps.now?.() ?? Date.now(), job.tz);
        const reason =
          (await runCapReached(limits, () => deps.store.jobRuns.ofRun(runId))) ??
          (await dayCapReached(limits, () => deps.store.jobRuns.ofJob(jobId, dayStart)));
        if (reason) {
          const label = job.name ? `"${job.name}"` : job.id;
          throw new UsageLimitError(reason, `The job ${label} stopped: ${reason}. It was: ${job.message}`);
        }
      }
      return model.complete(request);
    },
  };
}
