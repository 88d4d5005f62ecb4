import type { InboundMessage } from "../bus/types.js";
import type { CronJob } from "../store/store.js";
import { formatInZone } from "../time-zone.js";
import { describeSchedule, formatSeconds } from "./schedule.js";

/** A run is "late" when it fires this long after its time (pincer was down or the machine slept). */
export const LATE_AFTER_MS = 60_000;

/** Marks an inbound message as a scheduled run (the cron tool refuses to schedule from inside one). */
export function isScheduledRun(msg: InboundMessage): boolean {
  return msg.channel === "system" && msg.run.kind === "cron";
}

/** A run's id (its inbound message's): the same job and time always give the same id, so the inbox drops a second
 * copy; a run asked for (Run now) at `at` has an id of its own. */
export function runId(jobId: string, at: number, trigger: "schedule" | "manual"): string {
  return trigger === "schedule" ? `cron:${jobId}:${at}` : `cron:${jobId}:now:${at}`;
}

/** The inbound system message for one run of a job, addressed to the conversation the job was created in. Its text
 * tells the model this is the reminder itself, due now, so that it delivers it instead of scheduling it again. */
export function runMessage(
  job: CronJob,
  scheduledAt: number,
  now: number,
  trigger: "schedule" | "manual" = "schedule",
): InboundMessage {
  const recurring = job.schedule.kind !== "at";
  const kind = recurring ? "job" : "reminder";
  const label = job.name ? `${kind} "${job.name}" (id ${job.id})` : `${kind} ${job.id}`;
  const lines = [
    `Scheduled ${label} is due now: ${describeSchedule(job.schedule, job.tz)}.`,
    `What the user asked for when they set it up: ${job.message}`,
    "Deliver it now in your reply to the user: remind them, or do the task and give them the result. " +
      `Do not schedule it again${recurring ? "; it repeats by itself" : ""}.`,
  ];
  const lateBy = now - scheduledAt;
  if (trigger === "manual") lines.push("It runs now, off its schedule, because someone asked for a run now.");
  else if (lateBy > LATE_AFTER_MS) {
    lines.push(
      `This comes late: it was due at ${formatInZone(scheduledAt, job.tz)}, ${formatSeconds(Math.round(lateBy / 1000))} ago, ` +
        "while pincer was not running. Tell the user it is late.",
    );
  }
  return {
    id: runId(job.id, scheduledAt, trigger),
    channel: "system",
    chatId: job.origin.chatId,
    senderId: "cron",
    senderName: "scheduler",
    text: lines.join("\n"),
    media: [],
    isGroup: job.origin.isGroup,
    mentionsBot: true,
    receivedAt: now,
    sessionKey: job.origin.sessionKey,
    // The person the job runs for: what the run may see is decided as for their own messages.
    run: { kind: "cron", jobId: job.id, scheduledAt, reminder: job.message, userId: job.owner?.userId },
  };
}
