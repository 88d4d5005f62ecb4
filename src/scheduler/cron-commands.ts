import type { Store } from "../store/store.js";
import { describeSchedule, formatInZone } from "./schedule.js";

/** `pincer cron list`: every job of every conversation, soonest first. */
export async function listJobsText(store: Store["jobs"]): Promise<string> {
  const jobs = await store.listAll();
  if (jobs.length === 0) return "No scheduled jobs.";
  return [
    `${jobs.length} scheduled job${jobs.length === 1 ? "" : "s"}:`,
    ...jobs.map((job) =>
      [
        `  ${job.id}${job.name ? ` "${job.name}"` : ""}  ${job.origin.sessionKey}`,
        `    ${describeSchedule(job.schedule, job.tz)}`,
        `    owner: ${job.owner ? `${job.owner.channel} ${job.owner.userId}` : "unknown (created before owners were recorded; it does not run)"}`,
        job.pausedAt === undefined
          ? `    next run: ${formatInZone(job.nextRunAt, job.tz)}`
          : `    paused since ${formatInZone(job.pausedAt, job.tz)} (its owner lost access)`,
        `    message: ${job.message}`,
      ].join("\n"),
    ),
  ].join("\n");
}

/** `pincer cron remove ID`: the owner may remove any job; returns the message and whether it worked. */
export async function removeJob(store: Store["jobs"], id: string): Promise<{ ok: boolean; text: string }> {
  const job = await store.get(id);
  if (!job || !(await store.remove(id))) return { ok: false, text: `No job ${id} (pincer cron list shows the ids).` };
  return { ok: true, text: `Removed job ${job.id} (${job.origin.sessionKey}: ${job.message}).` };
}
