import { existsSync } from "node:fs";
import { extname } from "node:path";
import { type Api, GrammyError, InputFile } from "grammy";
import type { Logger } from "pino";
import { ProgressNotes } from "../../src/bus/progress-notes.js";
import type { DeliveryReceipt, OutboundMessage } from "../../src/bus/types.js";
import { markdownToTelegramHtml } from "./format.js";
import { htmlToPlainText, splitTelegramHtml } from "./split.js";

const PHOTO_EXTENSIONS = new Set([".jpg", ".jpeg", ".png", ".webp"]);

/** Telegram refused the HTML itself: the same words go out without formatting. */
export function isEntityParseError(err: unknown): boolean {
  return err instanceof GrammyError && err.error_code === 400 && /can't parse entities/i.test(err.description);
}

/**
 * A refusal that no retry or restart can fix (bad chat, bot blocked or kicked, message
 * malformed): the reply is dropped with an error in the log instead of being resent forever.
 */
export function isPermanentRefusal(err: unknown): boolean {
  return err instanceof GrammyError && (err.error_code === 400 || err.error_code === 403);
}

/**
 * Renders an outbound message on Telegram: markdown → HTML, split under the length limit, the
 * first part as a reply to the user's message, in the right forum topic. Transient failures
 * (after the API layer's own retries) reject, which leaves the message in the outbox.
 */
export function createSender(api: Api, log: Logger): (msg: OutboundMessage) => Promise<DeliveryReceipt> {
  const progress = progressNotes(api);
  return async (msg) => {
    if (msg.kind === "progress") return progress.show(msg);
    const threadId = msg.threadId ? Number(msg.threadId) : undefined;
    let replyTo = msg.replyToId ? Number(msg.replyToId) : undefined;
    const messageIds: string[] = [];
    try {
      for (const chunk of splitTelegramHtml(markdownToTelegramHtml(msg.text))) {
        const common = {
          message_thread_id: threadId,
          ...(replyTo ? { reply_parameters: { message_id: replyTo, allow_sending_without_reply: true } } : {}),
        };
        try {
          const sent = await api.sendMessage(msg.chatId, chunk, { ...common, parse_mode: "HTML" });
          messageIds.push(String(sent.message_id));
        } catch (err) {
          if (!isEntityParseError(err)) throw err;
          log.warn(
            { chatId: msg.chatId, err: (err as GrammyError).description },
            "telegram refused the HTML; sent as plain text",
          );
          const sent = await api.sendMessage(msg.chatId, htmlToPlainText(chunk), common);
          messageIds.push(String(sent.message_id));
        }
        replyTo = undefined;
      }
      for (const path of msg.media ?? []) {
        const id = await sendFile(api, msg.chatId, threadId, path, log);
        if (id !== undefined) messageIds.push(String(id));
      }
    } catch (err) {
      if (!isPermanentRefusal(err)) throw err;
      const description = (err as GrammyError).description;
      log.error({ chatId: msg.chatId, kind: msg.kind, err: description }, "telegram refused a message; dropped it");
      return { messageIds, refused: `Telegram refused it: ${description}` };
    }
    return { messageIds };
  };
}

/** Progress notes as plain text (no HTML that could fail to parse), edited in place. */
function progressNotes(api: Api): ProgressNotes {
  const thread = (msg: OutboundMessage) => (msg.threadId ? Number(msg.threadId) : undefined);
  return new ProgressNotes({
    send: async (msg) =>
      String((await api.sendMessage(msg.chatId, msg.text, { message_thread_id: thread(msg) })).message_id),
    edit: async (msg, id) => void (await api.editMessageText(msg.chatId, Number(id), msg.text)),
    remove: async (msg, id) => void (await api.deleteMessage(msg.chatId, Number(id))),
    isUnchanged: (err) => err instanceof GrammyError && /message is not modified/i.test(err.description),
  });
}

async function sendFile(
  api: Api,
  chatId: string,
  threadId: number | undefined,
  path: string,
  log: Logger,
): Promise<number | undefined> {
  if (!existsSync(path)) {
    log.warn({ chatId, path }, "attachment to send does not exist; skipped");
    return undefined;
  }
  const file = new InputFile(path);
  const sent = PHOTO_EXTENSIONS.has(extname(path).toLowerCase())
    ? await api.sendPhoto(chatId, file, { message_thread_id: threadId })
    : await api.sendDocument(chatId, file, { message_thread_id: threadId });
  return sent.message_id;
}
