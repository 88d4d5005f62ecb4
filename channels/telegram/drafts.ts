import { createHash } from "node:crypto";
import type { Api } from "grammy";
import { type DraftRenderer, DraftStream, draftIntervalMs } from "../../src/bus/draft-stream.js";
import { partialTelegramHtml } from "./format.js";
import { GrammyError, isUnchanged, retryAfterMs } from "./library.js";
import { splitTelegramHtml } from "./split.js";

/** Replies shown as they are written: in a private chat as Telegram's own draft (sendMessageDraft; the reply takes its
 * place), elsewhere (or where Telegram refuses drafts) as a message edited in place. `api` has no retry layers: a draft
 * that cannot be shown now waits for its next turn instead of holding the chat up. */
export function telegramDrafts(api: Api, onError: (err: unknown) => void): DraftRenderer {
  // Once refused (an older or self-hosted Bot API), native drafts are not tried again.
  let nativeRefused = false;
  return (target, onIds) => {
    const chatId = target.chatId;
    const thread = target.threadId ? { message_thread_id: Number(target.threadId) } : {};
    const draftId = Number.parseInt(createHash("sha256").update(target.key).digest("hex").slice(0, 7), 16) + 1;
    const refusal = (err: unknown) => err instanceof GrammyError && [400, 403, 404].includes(err.error_code);
    return new DraftStream(
      {
        parts: (text) => splitTelegramHtml(partialTelegramHtml(text)),
        ...(target.isPrivate && !nativeRefused
          ? {
              native: async (html: string) => {
                try {
                  await api.sendMessageDraft(Number(chatId), draftId, html, { ...thread, parse_mode: "HTML" });
                } catch (err) {
                  if (refusal(err)) nativeRefused = true;
                  throw err;
                }
              },
            }
          : {}),
        send: async (html, first) => {
          const replyTo = first && target.replyToId ? Number(target.replyToId) : undefined;
          const reply = replyTo ? { reply_parameters: { message_id: replyTo, allow_sending_without_reply: true } } : {};
          return String((await api.sendMessage(chatId, html, { ...thread, ...reply, parse_mode: "HTML" })).message_id);
        },
        edit: async (id, html) => void (await api.editMessageText(chatId, Number(id), html, { parse_mode: "HTML" })),
        remove: async (id) => void (await api.deleteMessage(chatId, Number(id))),
        retryAfterMs,
        isUnchanged,
        isRefusal: refusal,
      },
      { intervalMs: draftIntervalMs(target.isPrivate), messageIds: target.messageIds, onIds, onError },
    );
  };
}
