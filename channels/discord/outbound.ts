import { readFile } from "node:fs/promises";
import { basename } from "node:path";
import { DiscordAPIError, type REST, Routes } from "discord.js";
import type { Logger } from "pino";
import { ProgressNotes } from "../../src/bus/progress-notes.js";
import type { DeliveryReceipt, OutboundMessage } from "../../src/bus/types.js";
import { RetryError, retryWithBackoff } from "./retry.js";
import { splitMessage } from "./split.js";

export interface SendPolicy {
  attempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

/** Discord takes at most this many files per message. */
const MAX_FILES = 10;

/**
 * Renders outbound messages: the model's markdown goes out as Discord markdown, split under the
 * length limit, the first chunk replying to the user's message and files riding on the last one.
 * Rate limits (429) are handled inside discord.js's REST client; anything else that fails is
 * retried here with backoff. A message that still fails is reported once: a permanent refusal is
 * logged and dropped, a transient one rejects, which the bus logs, keeping the message in the
 * outbox for the next start.
 */
export function createOutboundHandler(deps: { rest: REST; log: Logger; policy: SendPolicy }) {
  const { rest, log, policy } = deps;
  const progress = progressNotes(rest);
  return async function send(msg: OutboundMessage): Promise<DeliveryReceipt> {
    if (msg.kind === "progress") return progress.show(msg);
    const channelId = msg.threadId ?? msg.chatId;
    const chunks = splitMessage(msg.text);
    const files = await loadFiles(msg.media ?? [], log);
    const messageIds: string[] = [];
    if (chunks.length === 0 && files.length === 0) return { messageIds };
    if (chunks.length === 0) chunks.push("");
    const failures: unknown[] = [];
    try {
      for (const [index, content] of chunks.entries()) {
        const body = {
          content,
          // The model's text must never ping @everyone or a role; the user it answers may be pinged.
          allowed_mentions: { parse: ["users"], replied_user: true },
          ...(index === 0 && msg.replyToId
            ? { message_reference: { message_id: msg.replyToId, fail_if_not_exists: false } }
            : {}),
        };
        const last = index === chunks.length - 1;
        const result = await retryWithBackoff(
          () => rest.post(Routes.channelMessages(channelId), { body, ...(last && files.length ? { files } : {}) }),
          { ...policy, isRetryable },
        );
        failures.push(...result.failures);
        const id = (result.value as { id?: unknown } | undefined)?.id;
        if (typeof id === "string") messageIds.push(id);
      }
    } catch (err) {
      const all = [...failures, ...(err instanceof RetryError ? err.failures : [err])];
      const last = all.at(-1);
      const context = { channelId, kind: msg.kind, attempts: all.length, err: last };
      if (!isRetryable(last)) {
        log.error(context, "Discord refused a message; dropped it");
        return { messageIds, refused: `Discord refused it: ${errorText(last)}` };
      }
      // The bus logs this rejection (once) and keeps the message in the outbox for the next start.
      throw new Error(
        `Discord send to channel ${channelId} failed ${all.length} times (${errorText(last)}); it stays in the outbox for the next start`,
        { cause: last },
      );
    }
    if (failures.length > 0) {
      log.warn(
        { channelId, failures: failures.length, err: failures.at(-1) },
        "sent a message to Discord after retrying",
      );
    }
    return { messageIds };
  };
}

/** Progress notes: one message per channel or thread, edited in place, deleted when the turn ends. */
function progressNotes(rest: REST): ProgressNotes {
  const where = (msg: OutboundMessage) => msg.threadId ?? msg.chatId;
  const noPings = { parse: [] as string[] };
  return new ProgressNotes({
    send: async (msg) => {
      const body = { content: msg.text, allowed_mentions: noPings };
      const posted = (await rest.post(Routes.channelMessages(where(msg)), { body })) as { id: string };
      return posted.id;
    },
    edit: async (msg, id) =>
      void (await rest.patch(Routes.channelMessage(where(msg), id), {
        body: { content: msg.text, allowed_mentions: noPings },
      })),
    remove: async (msg, id) => void (await rest.delete(Routes.channelMessage(where(msg), id))),
  });
}

/** A 4xx other than a rate limit will fail the same way again (missing access, unknown channel, bad body). */
export function isRetryable(err: unknown): boolean {
  if (err instanceof DiscordAPIError) return err.status === 429 || err.status >= 500;
  return true;
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

async function loadFiles(paths: string[], log: Logger): Promise<Array<{ name: string; data: Buffer }>> {
  const files: Array<{ name: string; data: Buffer }> = [];
  for (const path of paths.slice(0, MAX_FILES)) {
    try {
      files.push({ name: basename(path), data: await readFile(path) });
    } catch (err) {
      log.warn({ path, err }, "could not read a file to send to Discord; sending without it");
    }
  }
  if (paths.length > MAX_FILES)
    log.warn({ count: paths.length }, `Discord takes ${MAX_FILES} files per message; sent the first ones`);
  return files;
}
