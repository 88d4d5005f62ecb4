import { existsSync } from "node:fs";
import { extname } from "node:path";
import type { Api, GrammyError as GrammyErrorType } from "grammy";
import type { Logger } from "pino";
import { type Delivery, DeliveryError, LONG_REPLY_CHARS, longReplyFile } from "../../src/bus/delivery.js";
import { ProgressNotes } from "../../src/bus/progress-notes.js";
import type { DeliveryReceipt, OutboundMessage } from "../../src/bus/types.js";
import { escapeHtml, markdownToTelegramHtml } from "./format.js";
import { GrammyError, InputFile } from "./library.js";
import { htmlToPlainText, splitTelegramHtml } from "./split.js";

const PHOTO_EXTENSIONS = new Set([".jpg", ".jpeg", ".png", ".webp"]);

/** Telegram refused the HTML itself: the same words go out without formatting. */
export function isEntityParseError(err: unknown): boolean {
  return err instanceof GrammyError && err.error_code === 400 && /can't parse entities/i.test(err.description);
}

/**
 * A refusal that no retry or restart can fix (bad chat, bot blocked or kicked, message
 * malformed, a file too large): the message is dead-lettered at once instead of being resent forever.
 */
export function isPermanentRefusal(err: unknown): boolean {
  return err instanceof GrammyError && [400, 403, 413].includes(err.error_code);
}

/** Tells the outbox sender what a failed call means: refused for good, wait as asked, or try again later. */
export function toDeliveryError(err: unknown): unknown {
  if (!(err instanceof GrammyError)) return err;
  if (isPermanentRefusal(err))
    return new DeliveryError(`Telegram refused it: ${err.description}`, { permanent: true, cause: err });
  const retryAfter = err.parameters.retry_after;
  if (retryAfter !== undefined)
    return new DeliveryError(err.description, { retryAfterMs: retryAfter * 1000, cause: err });
  return err;
}

/** The parts a message goes out in, in order: the text split under the limit (or as one file), then each file. */
type Part = { kind: "text"; html: string } | { kind: "file"; path: string } | { kind: "long"; text: string };

function partsOf(msg: OutboundMessage, log: Logger): Part[] {
  const text: Part[] =
    msg.text.length > LONG_REPLY_CHARS
      ? [{ kind: "long", text: msg.text }]
      : splitTelegramHtml(formatted(msg, log)).map((html): Part => ({ kind: "text", html }));
  return [...text, ...(msg.media ?? []).map((path): Part => ({ kind: "file", path }))];
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

/**
 * Renders an outbound message on Telegram: markdown → HTML, split under the length limit, the
 * first part as a reply to the user's message, in the right forum topic. The split is the same
 * every time, so after a failure only the parts not yet sent go out. Failures reject for the
 * outbox sender to retry or dead-letter.
 */
export function createSender(
  api: Api,
  log: Logger,
): (msg: OutboundMessage, delivery: Delivery) => Promise<DeliveryReceipt> {
  const progress = progressNotes(api);
  return async (msg, delivery) => {
    if (msg.kind === "progress") return progress.show(msg);
    const threadId = msg.threadId ? Number(msg.threadId) : undefined;
    const parts = partsOf(msg, log);
    const messageIds: string[] = [];
    // grammy types its signal with its AbortController polyfill; Node's own signal is what it uses.
    const signal = delivery.signal as unknown as Parameters<Api["sendMessage"]>[3];
    for (let index = delivery.partsSent; index < parts.length; index++) {
      const part = parts[index];
      const replyTo = index === 0 && msg.replyToId ? Number(msg.replyToId) : undefined;
      let id: number | undefined;
      try {
        if (part.kind === "text") id = await sendText(api, msg.chatId, threadId, replyTo, part.html, signal, log);
        else if (part.kind === "long") id = await sendLong(api, msg.chatId, threadId, replyTo, part.text, signal);
        else id = await sendFile(api, msg.chatId, threadId, part.path, signal, log);
      } catch (err) {
        throw toDeliveryError(err);
      }
      const ids = id === undefined ? [] : [String(id)];
      await delivery.markPartSent(index === parts.length - 1, ids);
      messageIds.push(...ids);
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

async function sendText(
  api: Api,
  chatId: string,
  threadId: number | undefined,
  replyTo: number | undefined,
  html: string,
  signal: Parameters<Api["sendMessage"]>[3],
  log: Logger,
): Promise<number> {
  const common = {
    message_thread_id: threadId,
    ...(replyTo ? { reply_parameters: { message_id: replyTo, allow_sending_without_reply: true } } : {}),
  };
  try {
    return (await api.sendMessage(chatId, html, { ...common, parse_mode: "HTML" }, signal)).message_id;
  } catch (err) {
    if (!isEntityParseError(err)) throw err;
    log.warn({ chatId, err: (err as GrammyErrorType).description }, "telegram refused the HTML; sent as plain text");
    return (await api.sendMessage(chatId, htmlToPlainText(html), common, signal)).message_id;
  }
}

async function sendLong(
  api: Api,
  chatId: string,
  threadId: number | undefined,
  replyTo: number | undefined,
  text: string,
  signal: Parameters<Api["sendMessage"]>[3],
): Promise<number> {
  const { name, data, note } = longReplyFile(text);
  const options = {
    message_thread_id: threadId,
    caption: note,
    ...(replyTo ? { reply_parameters: { message_id: replyTo, allow_sending_without_reply: true } } : {}),
  };
  return (await api.sendDocument(chatId, new InputFile(data, name), options, signal)).message_id;
}

async function sendFile(
  api: Api,
  chatId: string,
  threadId: number | undefined,
  path: string,
  signal: Parameters<Api["sendMessage"]>[3],
  log: Logger,
): Promise<number | undefined> {
  if (!existsSync(path)) {
    log.warn({ chatId, path }, "attachment to send does not exist; skipped");
    return undefined;
  }
  const file = new InputFile(path);
  const sent = PHOTO_EXTENSIONS.has(extname(path).toLowerCase())
    ? await api.sendPhoto(chatId, file, { message_thread_id: threadId }, signal)
    : await api.sendDocument(chatId, file, { message_thread_id: threadId }, signal);
  return sent.message_id;
}
