import type { Logger } from "pino";
import type { SenderEvents } from "./outbox-sender.js";

/** The outbox sender's log lines: an outage once when it starts and once when it ends, a dead letter once. */
export function outboxLog(log: Logger): SenderEvents {
  const describe = (err: unknown) => (err instanceof Error ? err.message : String(err));
  return {
    onRetry: (channel, row, err, delayMs, first) =>
      (first ? log.warn.bind(log) : log.debug.bind(log))(
        { channel, chatId: row.msg.chatId, outboxId: row.id, err: describe(err), retryInMs: delayMs },
        first ? "could not send; retrying with backoff until it works" : "could not send again",
      ),
    onStoreFailure: (channel, err, failures) =>
      (failures === 1 ? log.warn.bind(log) : log.debug.bind(log))(
        { channel, err: describe(err), failures },
        "could not read or write the outbox; sending waits until the store answers",
      ),
    onRecovered: (channel, failures) => log.info({ channel, failures }, "sending works again"),
    onSent: (channel, row, waitedMs, sendMs) =>
      log.debug({ channel, outboxId: row.id, waitedMs, sendMs: Math.round(sendMs * 100) / 100 }, "sent"),
    onDeadLetter: (channel, row, err, reason) =>
      log.error(
        {
          channel,
          chatId: row.msg.chatId,
          kind: row.msg.kind,
          outboxId: row.id,
          attempts: row.attempts + 1,
          err: describe(err),
        },
        reason === "refused"
          ? "the platform refused a message for good; moved it to the dead letters"
          : "gave up on a message that could not be sent for too long; moved it to the dead letters",
      ),
  };
}
