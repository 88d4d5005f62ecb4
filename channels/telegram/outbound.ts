import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { extname } from "node:path";
import type { Api, GrammyError as GrammyErrorType } from "grammy";
import type { InlineKeyboardMarkup } from "grammy/types";
import type { Logger } from "pino";
import { DeliveryError, LONG_REPLY_CHARS, longReplyFile, type OutboundHandler } from "../../src/bus/delivery.js";
import { type DraftRenderer, DraftStream, draftIntervalMs } from "../../src/bus/draft-stream.js";
import { progressNotes } from "../../src/bus/progress-notes.js";
import type { OutboundMessage, VoiceNote } from "../../src/bus/types.js";
import { keyboardOf } from "./buttons.js";
import { escapeHtml, markdownToTelegramHtml, partialTelegramHtml } from "./format.js";
import { GrammyError, InputFile, isUnchanged, retryAfterMs } from "./library.js";
import { htmlToPlainText, splitTelegramHtml } from "./split.js";

const PHOTO_EXTENSIONS = new Set([".jpg", ".jpeg", ".png", ".webp"]);

/** Telegram refused the HTML itself: the same words go out without formatting. */
const isEntityParseError = (err: unknown): err is GrammyErrorType =>
  err instanceof GrammyError && err.error_code === 400 && /can't parse entities/i.test(err.description);

/** No retry or restart fixes it (bad chat, bot blocked or kicked, malformed, file too large): dead-lettered at once. */
const isPermanentRefusal = (err: unknown) => err instanceof GrammyError && [400, 403, 413].includes(err.error_code);

/** Tells the outbox sender what a failed call means: refused for good, wait as asked, or try again later. */
function toDeliveryError(err: unknown): unknown {
  if (!(err instanceof GrammyError)) return err;
  if (isPermanentRefusal(err))
    return new DeliveryError(`Telegram refused it: ${err.description}`, { permanent: true, cause: err });
  const retryAfter = retryAfterMs(err);
  return retryAfter === undefined ? err : new DeliveryError(err.description, { retryAfterMs: retryAfter, cause: err });
}

/** The parts a message goes out in, in order: the text split under the limit (or as one file), then each file, then
 * its voice note; a short reply with nothing else to send is one voice note with the text as its caption. */
type Part =
  | { kind: "text"; html: string }
  | { kind: "file"; path: string }
  | { kind: "long"; text: string }
  | { kind: "voice"; voice: VoiceNote; caption?: string };

/** Telegram's limit for a caption's visible characters. */
const CAPTION_CHARS = 1024;

function partsOf(msg: OutboundMessage, log: Logger): Part[] {
  const { voice } = msg;
  if (voice && msg.text.length <= CAPTION_CHARS && !msg.draftIds?.length && !msg.media?.length) {
    const [caption] = splitTelegramHtml(formatted(msg, log));
    if (caption !== undefined && htmlToPlainText(caption).length <= CAPTION_CHARS)
      return [{ kind: "voice", voice, caption }];
  }
  const text: Part[] =
    msg.text.length > LONG_REPLY_CHARS
      ? [{ kind: "long", text: msg.text }]
      : splitTelegramHtml(formatted(msg, log)).map((html) => ({ kind: "text", html }));
  const files = (msg.media ?? []).map((path): Part => ({ kind: "file", path }));
  return [...text, ...files, ...(voice ? [{ kind: "voice", voice } as const] : [])];
}

/** The reply as Telegram HTML, or as escaped plain text when formatting fails: it fails the same way every time. */
function formatted(msg: OutboundMessage, log: Logger): string {
  try {
    return markdownToTelegramHtml(msg.text);
  } catch (err) {
    log.warn({ chatId: msg.chatId, err: String(err) }, "could not format a reply; sending it as plain text");
    return escapeHtml(msg.text);
  }
}

/** Markdown → HTML in parts, split the same way every time: after a failure only the parts not yet sent go out. */
export function createSender(api: Api, log: Logger): OutboundHandler {
  // Progress notes go as plain text: no HTML that could fail to parse.
  const thread = (msg: OutboundMessage) => (msg.threadId ? Number(msg.threadId) : undefined);
  const showProgress = progressNotes({
    send: async (msg) =>
      String((await api.sendMessage(msg.chatId, msg.text, { message_thread_id: thread(msg) })).message_id),
    edit: async (msg, id) => void (await api.editMessageText(msg.chatId, Number(id), msg.text)),
    remove: async (msg, id) => void (await api.deleteMessage(msg.chatId, Number(id))),
    isUnchanged,
  });
  return async (msg, delivery) => {
    if (msg.kind === "progress") return showProgress(msg);
    const { chatId } = msg;
    // grammy types its signal with its AbortController polyfill; Node's own signal is what it uses.
    const signal = delivery.signal as unknown as Parameters<Api["sendMessage"]>[3];
    const htmlOrPlain = async <T>(html: string, call: (text: string, mode: ParseMode) => Promise<T>): Promise<T> => {
      try {
        return await call(html, { parse_mode: "HTML" });
      } catch (err) {
        if (!isEntityParseError(err)) throw err;
        log.warn({ chatId, err: err.description }, "telegram refused the HTML; sent as plain text");
        return call(htmlToPlainText(html), {});
      }
    };
    const sendText = async (html: string, options: SendOptions) =>
      (await htmlOrPlain(html, (text, mode) => api.sendMessage(chatId, text, { ...options, ...mode }, signal)))
        .message_id;
    // A part in place of its draft message: edited to it, or posted anew when the draft is gone.
    const replaceDraft = async (draftId: number, html: string, options: SendOptions) => {
      try {
        await htmlOrPlain(html, (text, mode) =>
          api.editMessageText(chatId, draftId, text, { reply_markup: options.reply_markup, ...mode }, signal),
        );
        return draftId;
      } catch (err) {
        if (isUnchanged(err)) return draftId;
        if (!isPermanentRefusal(err)) throw err;
        return sendText(html, options);
      }
    };
    const sendFile = async (path: string, options: SendOptions) => {
      if (!existsSync(path)) {
        log.warn({ chatId, path }, "attachment to send does not exist; skipped");
        return undefined;
      }
      // Files are not sent as replies; the thread and the keyboard go with them.
      const { reply_parameters: _, ...rest } = options;
      const file = new InputFile(path);
      const photo = PHOTO_EXTENSIONS.has(extname(path).toLowerCase());
      return (
        photo ? await api.sendPhoto(chatId, file, rest, signal) : await api.sendDocument(chatId, file, rest, signal)
      ).message_id;
    };

    // The spoken reply; one whose file is gone (cleaned up before a late retry) leaves its caption as a message.
    const sendVoice = async (voice: VoiceNote, caption: string | undefined, options: SendOptions) => {
      if (!existsSync(voice.path)) {
        log.warn({ chatId, path: voice.path }, "voice note to send does not exist; skipped");
        return caption === undefined ? undefined : sendText(caption, options);
      }
      const extra = { ...options, duration: voice.seconds };
      const send = (text: string | undefined, mode: ParseMode) =>
        api.sendVoice(chatId, new InputFile(voice.path), { ...extra, caption: text, ...mode }, signal);
      return (caption === undefined ? await send(undefined, {}) : await htmlOrPlain(caption, send)).message_id;
    };

    try {
      if (msg.editOf && "messageId" in msg.editOf) {
        // The text (formatted, cut to one message) and keyboard (none removes it) are replaced; a message that cannot
        // be edited (deleted, too old, not text) is a 400: refused for good.
        const messageId = msg.editOf.messageId;
        if (!/^\d+$/.test(messageId))
          throw new DeliveryError(`no Telegram message ${messageId} to edit`, { permanent: true });
        const [html = ""] = splitTelegramHtml(formatted({ ...msg, text: msg.text.slice(0, 8192) }, log));
        await htmlOrPlain(html, (text, mode) =>
          api.editMessageText(chatId, Number(messageId), text, { reply_markup: keyboardOf(msg), ...mode }, signal),
        ).catch((err: unknown) => {
          if (!isUnchanged(err)) throw err;
        });
        await delivery.markPartSent(true, [messageId]);
        return { messageIds: [messageId] };
      }
      const parts = partsOf(msg, log);
      const messageIds: string[] = [];
      const drafts = msg.draftIds ?? [];
      // Draft messages the reply does not need (it came out shorter, or goes as a file) go first.
      const texts = parts.filter((part) => part.kind === "text").length;
      if (delivery.partsSent === 0)
        for (const id of drafts.slice(texts)) await api.deleteMessage(chatId, Number(id)).catch(() => {});
      for (let index = delivery.partsSent; index < parts.length; index++) {
        const part = parts[index];
        const options: SendOptions = {
          message_thread_id: msg.threadId ? Number(msg.threadId) : undefined,
          // Only to a Telegram message: an answer to a button tap (inbound id `tap:…`) replies to nothing.
          ...(index === 0 && msg.replyToId && /^\d+$/.test(msg.replyToId)
            ? { reply_parameters: { message_id: Number(msg.replyToId), allow_sending_without_reply: true } }
            : {}),
          // The buttons go under the last part, where the user is reading.
          ...(index === parts.length - 1 ? { reply_markup: keyboardOf(msg) } : {}),
        };
        let id: number | undefined;
        if (part.kind === "text")
          id = drafts[index]
            ? await replaceDraft(Number(drafts[index]), part.html, options)
            : await sendText(part.html, options);
        else if (part.kind === "file") id = await sendFile(part.path, options);
        else if (part.kind === "voice") id = await sendVoice(part.voice, part.caption, options);
        else {
          const { name, data, note } = longReplyFile(part.text);
          id = (await api.sendDocument(chatId, new InputFile(data, name), { ...options, caption: note }, signal))
            .message_id;
        }
        const ids = id === undefined ? [] : [String(id)];
        await delivery.markPartSent(index === parts.length - 1, ids);
        messageIds.push(...ids);
      }
      return { messageIds };
    } catch (err) {
      throw toDeliveryError(err);
    }
  };
}

type SendOptions = Pick<NonNullable<Parameters<Api["sendMessage"]>[2]>, "message_thread_id" | "reply_parameters"> & {
  reply_markup?: InlineKeyboardMarkup;
};
type ParseMode = { parse_mode?: "HTML" };

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
