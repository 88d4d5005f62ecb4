import type { InboundMessage, Quote, SystemRun } from "./types.js";

/** Before messages were a typed union, their facts travelled as strings in `meta`; inbox rows may still hold them. */
type StoredRow = InboundMessage & { meta?: Record<string, string> };

/** A message as the inbox (or a helper's run) stored it; one an older pincer stored is read into today's shape. */
export function inboundFromStored(payload: string): InboundMessage {
  const { meta, ...msg } = JSON.parse(payload) as StoredRow;
  if (msg.channel === "system") return msg.run ? msg : { ...msg, run: runFromMeta(meta ?? {}) };
  if (!meta) return msg;
  const trust: Quote["trust"] = meta.quotedTrust === "bot" || meta.quotedTrust === "self" ? meta.quotedTrust : "other";
  return {
    ...msg,
    ...(meta.quotedText ? { quote: { text: meta.quotedText, from: meta.quotedFrom ?? "", trust } } : {}),
    ...(meta.forwardedFrom ? { forwardedFrom: meta.forwardedFrom } : {}),
  };
}

function runFromMeta(meta: Record<string, string>): SystemRun {
  const given = (...keys: string[]) =>
    Object.fromEntries(keys.filter((key) => meta[key]).map((key) => [key, meta[key]]));
  if (meta.kind === "heartbeat") return { kind: "heartbeat", deliverTo: meta.deliverTo ?? "", ...given("silentReply") };
  if (meta.kind === "helper")
    return { kind: "helper", runId: meta.runId ?? "", status: meta.status ?? "", ...given("userId", "deliverTo") };
  const scheduledAt = Number(meta.scheduledAt) || 0;
  return { kind: "cron", jobId: meta.jobId ?? "", scheduledAt, ...given("reminder", "userId") };
}
