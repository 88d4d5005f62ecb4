import type { Logger } from "pino";
import type { Switchboard } from "../bus/switchboard.js";
import type { InboundMessage, OutboundMessage } from "../bus/types.js";
import { parseJson } from "../llm/text-tool-calls.js";
import type { JobRunEnd, Store, StoredMessage } from "../store/store.js";
import { isScheduledRun } from "./run-message.js";

/** How a scheduled run's turn ended, from what the turn stored and sent: its reply (or what it sent with the message
 * tool), a failure's notice, a stop, or nothing at all (it was not run). Pure. */
export function runEnd(messages: StoredMessage[], out: OutboundMessage | undefined, at: number): JobRunEnd {
  const calls = messages.flatMap((m) => (m.role === "assistant" ? (m.toolCalls ?? []) : []));
  const toolCalls = calls.length;
  if (out?.failed) return { outcome: "failed", toolCalls, reason: out.text, at };
  if (out?.kind === "reply") return { outcome: "ok", toolCalls, delivered: out.text, at };
  if (out) return { outcome: "stopped", toolCalls, reason: out.text, at };
  if (messages.length === 0) {
    return { outcome: "skipped", toolCalls, reason: "not run: its owner lost access, or it was set aside", at };
  }
  const sent = calls.filter((c) => c.name === "message").map((c) => (parseJson(c.arguments) as Sent)?.content);
  const delivered = sent.filter((text) => typeof text === "string" && text).join("\n");
  return delivered
    ? { outcome: "ok", toolCalls, delivered, at }
    : { outcome: "ok", toolCalls, reason: "the model had nothing to send", at };
}

type Sent = { content?: unknown } | undefined;

export interface RunRecorderDeps {
  store: Pick<Store, "jobs" | "jobRuns">;
  bus: Pick<Switchboard, "publishOutbound">;
  /** Config cron.pauseAfterFailures: this many failed runs in a row pause a job. */
  pauseAfterFailures: number;
  log: Logger;
  now?: () => number;
}

/** The turns' store, recording each scheduled run's end in its job's history once the turn is stored; the failure that
 * pauses a job tells its chat, once. A record that fails is logged, never the turn's failure. */
export function recordingRunEnds<T extends Pick<Store["turns"], "finishTurn">>(turns: T, deps: RunRecorderDeps): T {
  const recording: T = Object.create(turns);
  recording.finishTurn = async (msg: InboundMessage, messages: StoredMessage[], out: OutboundMessage | undefined) => {
    const outboxId = await turns.finishTurn(msg, messages, out);
    if (isScheduledRun(msg)) {
      await recordEnd(msg, runEnd(messages, out, deps.now?.() ?? Date.now()), deps).catch((err: unknown) =>
        deps.log.warn({ err, runId: msg.id }, "could not record a job's run"),
      );
    }
    return outboxId;
  };
  return recording;
}

async function recordEnd(msg: InboundMessage, end: JobRunEnd, deps: RunRecorderDeps): Promise<void> {
  const { store, pauseAfterFailures, log } = deps;
  const ended = await store.jobRuns.finish(msg.id, end, pauseAfterFailures);
  if (!ended.pausedNow || !ended.jobId) return;
  const job = await store.jobs.get(ended.jobId);
  if (!job) return;
  log.warn({ jobId: job.id, failures: job.failures }, "a job failed too often in a row; it is paused");
  const { channel, chatId, threadId } = job.origin;
  const text = [
    `Your job ${job.name ? `"${job.name}"` : job.id} failed ${job.failures} times in a row, so I paused it.`,
    `The last time: ${end.reason ?? "it failed"}`,
    "Send /jobs to resume it (or remove it), or use the control page.",
  ].join("\n");
  await deps.bus.publishOutbound({ channel, chatId, threadId, kind: "notice", text });
}
