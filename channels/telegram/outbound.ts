import { existsSync } from "node:fs";
import { extname } from "node:path";
import { type Api, GrammyError, InputFile } from "grammy";
import type { Logger } from "pino";
import type { OutboundMessage } from "../../src/bus/types.js";
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
export function createSender(api: Api, log: Logger): (msg: OutboundMessage) => Promise<void> {
  return async (msg) => {
    const threadId = msg.threadId ? Number(msg.threadId) : undefined;
    let replyTo = msg.replyToId ? Number(msg.replyToId) : undefined;
    try {
      for (const chunk of splitTelegramHtml(markdownToTelegramHtml(msg.text))) {
        const common = {
          message_thread_id: threadId,
          ...(replyTo ? { reply_parameters: { message_id: replyTo, allow_sending_without_reply: true } } : {}),
        };
        try {
          await api.sendMessage(msg.chatId, chunk, { ...common, parse_mode: "HTML" });
        } catch (err) {
          if (!isEntityParseError(err)) throw err;
          log.warn(
            { chatId: msg.chatId, err: (err as GrammyError).description },
            "telegram refused the HTML; sent as plain text",
          );
          await api.sendMessage(msg.chatId, htmlToPlainText(chunk), common);
        }
        replyTo = undefined;
      }
      for (const path of msg.media ?? []) await sendFile(api, msg.chatId, threadId, path, log);
    } catch (err) {
      if (!isPermanentRefusal(err)) throw err;
      log.error(
        { chatId: msg.chatId, kind: msg.kind, err: (err as GrammyError).description },
        "telegram refused a message; dropped it",
      );
    }
  };
}

async function sendFile(
  api: Api,
  chatId: string,
  threadId: number | undefined,
  path: string,
  log: Logger,
): Promise<void> {
  if (!existsSync(path)) {
    log.warn({ chatId, path }, "attachment to send does not exist; skipped");
    return;
  }
  const file = new InputFile(path);
  if (PHOTO_EXTENSIONS.has(extname(path).toLowerCase()))
    await api.sendPhoto(chatId, file, { message_thread_id: threadId });
  else await api.sendDocument(chatId, file, { message_thread_id: threadId });
}
