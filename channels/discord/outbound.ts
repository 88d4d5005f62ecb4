import { readFile } from "node:fs/promises";
import { basename } from "node:path";
import type { REST } from "discord.js";
import type { Logger } from "pino";
import { type Delivery, DeliveryError, LONG_REPLY_CHARS, longReplyFile } from "../../src/bus/delivery.js";
import { type DraftRenderer, DraftStream, draftIntervalMs } from "../../src/bus/draft-stream.js";
import { progressNotes } from "../../src/bus/progress-notes.js";
import type { DeliveryReceipt, OutboundMessage, VoiceNote } from "../../src/bus/types.js";
import { componentsOf } from "./buttons.js";
import { DiscordAPIError, RateLimitError, Routes } from "./library.js";
import { openFenceAtEnd, splitMessage } from "./split.js";

/** Notes, drafts and edits ping nobody: whoever a reply pings is pinged when it is posted. */
const NO_PINGS = { parse: [] as string[] };

/** The first part of a reply answers the user's message; one deleted meanwhile is no reason to refuse it. */
const replyingTo = (id: string) => ({ message_reference: { message_id: id, fail_if_not_exists: false } });

/** Discord takes at most this many files per message. */
const MAX_FILES = 10;

/** The model's markdown as Discord markdown, split under the length limit, the first chunk replying to the user's
 * message, files on the last. The split is the same every time, so after a failure only the chunks not sent go out.
 * discord.js waits out short rate limits; anything else rejects for the outbox sender to retry or dead-letter. */
export function createOutboundHandler(deps: { rest: REST; log: Logger }) {
  const { rest, log } = deps;
  const where = (msg: OutboundMessage) => msg.threadId ?? msg.chatId;
  const note = (msg: OutboundMessage) => ({ body: { content: msg.text, allowed_mentions: NO_PINGS } });
  const showProgress = progressNotes({
    send: async (msg) => ((await rest.post(Routes.channelMessages(where(msg)), note(msg))) as { id: string }).id,
    edit: async (msg, id) => void (await rest.patch(Routes.channelMessage(where(msg), id), note(msg))),
    remove: async (msg, id) => void (await rest.delete(Routes.channelMessage(where(msg), id))),
  });
  return async function send(msg: OutboundMessage, delivery: Delivery): Promise<DeliveryReceipt> {
    if (msg.kind === "progress") return showProgress(msg);
    const channelId = where(msg);
    const { signal } = delivery;
    const patch = (id: string, body: object) => rest.patch(Routes.channelMessage(channelId, id), { body, signal });
    try {
      if (msg.editOf && "messageId" in msg.editOf) {
        const messageId = msg.editOf.messageId;
        // The content and the buttons are replaced (none: [] removes them); an unknown message is a 404, refused.
        const content = splitMessage(msg.text)[0] ?? "";
        await patch(messageId, { content, components: componentsOf(msg), allowed_mentions: NO_PINGS });
        await delivery.markPartSent(true, [messageId]);
        return { messageIds: [messageId] };
      }
      const long = msg.text.length > LONG_REPLY_CHARS ? longReplyFile(msg.text) : undefined;
      const chunks = long ? [long.note] : splitMessage(msg.text);
      const files = [
        ...(long ? [{ name: long.name, data: long.data }] : []),
        ...(await loadFiles(msg.media ?? [], log)),
      ].slice(0, MAX_FILES);
      const messageIds: string[] = [];
      if (chunks.length === 0 && files.length === 0) return { messageIds };
      if (chunks.length === 0) chunks.push("");
      // A draft's messages take the reply's text parts; those it does not need go first.
      const drafts = (msg.draftIds ?? []).slice(0, files.length > 0 ? chunks.length - 1 : chunks.length);
      if (delivery.partsSent === 0)
        for (const id of (msg.draftIds ?? []).slice(drafts.length))
          await rest.delete(Routes.channelMessage(channelId, id)).catch(() => {});
      const parts = chunks.length + (msg.voice ? 1 : 0);
      for (let index = delivery.partsSent; index < chunks.length; index++) {
        const last = index === chunks.length - 1;
        const body = {
          content: chunks[index],
          // The model's text must never ping @everyone or a role; the user it answers may be pinged.
          allowed_mentions: { parse: ["users"], replied_user: true },
          // The buttons go under the last chunk, where the user is reading.
          ...(last && msg.buttons ? { components: componentsOf(msg) } : {}),
        };
        // Only to a Discord message: an answer to a button tap (inbound id `tap:…`) replies to nothing.
        const reference = index === 0 && msg.replyToId && /^\d+$/.test(msg.replyToId) ? replyingTo(msg.replyToId) : {};
        const post = () =>
          rest.post(Routes.channelMessages(channelId), {
            body: { ...body, ...reference },
            ...(last && files.length ? { files } : {}),
            signal,
          });
        // A draft keeps its reference to the user's message; one deleted meanwhile is posted anew.
        const posted = drafts[index]
          ? await patch(drafts[index], body).catch((err: unknown) =>
              err instanceof DiscordAPIError && err.status === 404 ? post() : Promise.reject(err),
            )
          : await post();
        const id = (posted as { id?: unknown } | undefined)?.id;
        const ids = typeof id === "string" ? [id] : [];
        await delivery.markPartSent(index === parts - 1, ids);
        messageIds.push(...ids);
      }
      if (msg.voice && delivery.partsSent < parts) {
        const ids = await postVoice(rest, channelId, msg.voice, { signal, log });
        await delivery.markPartSent(true, ids);
        messageIds.push(...ids);
      }
      return { messageIds };
    } catch (err) {
      throw toDeliveryError(err);
    }
  };
}

function toDeliveryError(err: unknown): unknown {
  if (err instanceof RateLimitError)
    return new DeliveryError(`Discord rate limit on ${err.route}`, { retryAfterMs: err.retryAfter, cause: err });
  // A 4xx other than a rate limit fails the same way again (missing access, unknown channel, bad body).
  if (err instanceof DiscordAPIError && err.status !== 429 && err.status < 500)
    return new DeliveryError(`Discord refused it: ${err.message}`, { permanent: true, cause: err });
  return err;
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

/** Discord's message flag for a voice message: one OGG/Opus attachment with its length and waveform, no text. */
const IS_VOICE_MESSAGE = 1 << 13;

/** The spoken reply as a voice message, after its text; where Discord refuses one (a 400), as an OGG attachment. */
async function postVoice(
  rest: REST,
  channelId: string,
  voice: VoiceNote,
  { signal, log }: { signal: AbortSignal; log: Logger },
): Promise<string[]> {
  const data = await readFile(voice.path).catch(() => undefined);
  if (!data) {
    log.warn({ channelId, path: voice.path }, "voice note to send does not exist; skipped");
    return [];
  }
  const filename = "voice-message.ogg";
  const files = [{ name: filename, data, contentType: "audio/ogg" }];
  const post = (body: object) => rest.post(Routes.channelMessages(channelId), { body, files, signal });
  const attachment = { id: 0, filename, duration_secs: voice.seconds, waveform: voice.waveform };
  const posted = await post({ flags: IS_VOICE_MESSAGE, attachments: [attachment] }).catch((err: unknown) => {
    if (!(err instanceof DiscordAPIError && err.status === 400)) throw err;
    log.info({ channelId, err: err.message }, "Discord refused a voice message; sending the note as an OGG attachment");
    return post({ attachments: [{ id: 0, filename }], allowed_mentions: NO_PINGS });
  });
  const id = (posted as { id?: unknown } | undefined)?.id;
  return typeof id === "string" ? [id] : [];
}

/** Replies shown as they are written, a message edited in place (a new one past 2,000 characters), an open code block
 * closed so the rest is not shown as code. Drafts ping nobody; discord.js waits out short rate limits itself. */
export function discordDrafts(rest: REST, onError: (err: unknown) => void): DraftRenderer {
  return (target, onIds) => {
    const channelId = target.threadId ?? target.chatId;
    return new DraftStream(
      {
        parts: (text) => {
          const fence = openFenceAtEnd(text);
          return splitMessage(fence ? `${text}\n${fence.marker}` : text);
        },
        send: async (content, first) => {
          const reply = first && target.replyToId ? replyingTo(target.replyToId) : {};
          const body = { content, allowed_mentions: NO_PINGS, ...reply };
          return ((await rest.post(Routes.channelMessages(channelId), { body })) as { id: string }).id;
        },
        edit: async (id, content) =>
          void (await rest.patch(Routes.channelMessage(channelId, id), {
            body: { content, allowed_mentions: NO_PINGS },
          })),
        remove: async (id) => void (await rest.delete(Routes.channelMessage(channelId, id))),
        retryAfterMs: (err) => (err instanceof RateLimitError ? err.retryAfter : undefined),
        isRefusal: (err) =>
          err instanceof DiscordAPIError && err.status >= 400 && err.status < 500 && err.status !== 429,
      },
      { intervalMs: draftIntervalMs(target.isPrivate), messageIds: target.messageIds, onIds, onError },
    );
  };
}
