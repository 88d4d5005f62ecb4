import { EventEmitter, once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type {
  Chat,
  InlineKeyboardButton,
  InlineKeyboardMarkup,
  Message,
  MessageEntity,
  Update,
  User,
  UserFromGetMe,
} from "grammy/types";

/** One request the bot made, in arrival order. */
export interface ApiCall {
  method: string;
  params: Record<string, unknown>;
  /** Epoch milliseconds when the request arrived. */
  at: number;
  /** The HTTP status the fake answered with (0 while a long poll is still held). */
  status: number;
}

/** A message the bot sent successfully (sendMessage, sendDocument, sendPhoto). */
export interface SentMessage {
  method: string;
  chatId: string;
  text: string;
  parseMode?: string;
  threadId?: number;
  replyToId?: number;
  /** For files: the multipart field name, the file's name and (voice notes) its bytes. */
  file?: { field: string; name: string; size: number; data?: Buffer };
  /** sendVoice's duration (seconds). */
  duration?: number;
  messageId: number;
  at: number;
  /** Texts it was edited to (editMessageText), in order. */
  edits?: string[];
  /** Removed with deleteMessage. */
  deleted?: boolean;
  /** The inline keyboard under it now (reply_markup when sent, replaced by each edit). */
  keyboard?: InlineKeyboardButton[][];
}

/** How the fake should fail the next call of a method, the way the Bot API fails. */
export interface Failure {
  status: 400 | 401 | 403 | 404 | 409 | 413 | 429 | 500 | 502 | 503;
  description?: string;
  /** Seconds; sent as parameters.retry_after (429). */
  retryAfter?: number;
}

export interface FakeTelegramOptions {
  token?: string;
  bot?: Partial<UserFromGetMe>;
  /** Upper bound for how long a getUpdates call is held, whatever its timeout asks (seconds). */
  maxPollSeconds?: number;
}

/** An update as a test writes it: ids and dates are filled in by pushUpdate. */
export type UpdateInput = Omit<Update, "update_id"> & { update_id?: number };

export interface FakeTelegram {
  /** For TELEGRAM_API_ROOT / grammy's `client.apiRoot`. */
  apiRoot: string;
  token: string;
  botUser: UserFromGetMe;
  /** Queues an update for getUpdates (a held long poll answers at once); fills in update_id, message ids and dates. */
  pushUpdate(update: UpdateInput): Update;
  /** Stores a file for getFile and the download path; returns what a Message's photo/document would carry. */
  addFile(
    content: Buffer | string,
    /**
     * `delayMs` holds the download this long (a slow file server); `filePath` is getFile's answer
     * instead of `documents/<fileName>` (a self-hosted server in --local mode answers a local path).
     */
    options?: { fileName?: string; delayMs?: number; filePath?: string },
  ): { file_id: string; file_unique_id: string; file_size: number };
  /** Every request, in order. */
  calls: ApiCall[];
  callsTo(method: string): ApiCall[];
  /** Successful sends, in order. */
  sent: SentMessage[];
  /** Native drafts shown (sendMessageDraft), in order: what the chat showed while a reply was written. */
  drafts: Array<{ chatId: string; draftId: number; text: string; at: number }>;
  /** Fails the next `times` calls of `method` with `failure`. */
  failNext(method: string, failure: Failure, times?: number): void;
  /** Ends every scripted failure (the end of an outage). */
  clearFailures(): void;
  /**
   * Holds the `nth` call of `method` from now on (counting every call so far) without answering
   * it. `arrived` resolves when it comes; after `release()` it is answered, or dropped unsent if
   * the client went away (a process killed mid-request).
   */
  holdCall(method: string, nth: number): { arrived: Promise<void>; clientGone: Promise<void>; release(): void };

  /** Resolves with the first truthy value of `check`, polled until `timeoutMs` (then rejects). */
  waitFor<T>(
    check: () => T | undefined | null | false | Promise<T | undefined | null | false>,
    timeoutMs?: number,
  ): Promise<T>;
  /** Posts an update to the webhook the bot registered with setWebhook; returns the HTTP status. */
  deliverWebhook(update: UpdateInput): Promise<number>;
  /** Updates not yet confirmed by a getUpdates offset. */
  pendingUpdates(): number;
  /**
   * `from` presses the button labelled `label` under a sent message: queues the callback query a
   * client sends (the message with its keyboard as it is now). Returns the query's id.
   */
  tap(message: SentMessage, label: string, from: User, options?: { id?: string }): string;
  /** The answers given to callback queries, by query id (answerCallbackQuery). */
  answers: Map<string, { text?: string }>;
  close(): Promise<void>;
}

const HTML_TAGS = new Set([
  "b",
  "strong",
  "i",
  "em",
  "u",
  "ins",
  "s",
  "strike",
  "del",
  "a",
  "code",
  "pre",
  "blockquote",
  "tg-spoiler",
  "span",
  "tg-emoji",
]);

/**
 * A Bot API server on 127.0.0.1 that behaves like Telegram where pincer depends on it: long-polled
 * getUpdates with offset confirmation, message limits and HTML entity parsing errors, file
 * downloads, webhooks, and scripted failures (429 with retry_after, 5xx, 400).
 */
export async function startFakeTelegram(options: FakeTelegramOptions = {}): Promise<FakeTelegram> {
  const token = options.token ?? "123456:AAH-fake-telegram-token_for_tests_0123";
  const botUser: UserFromGetMe = {
    id: Number(token.split(":")[0]) || 123,
    is_bot: true,
    first_name: "Pincer",
    username: "pincer_test_bot",
    can_join_groups: true,
    can_read_all_group_messages: false,
    supports_inline_queries: false,
    can_connect_to_business: false,
    has_main_web_app: false,
    has_topics_enabled: false,
    allows_users_to_create_topics: false,
    can_manage_bots: false,
    supports_join_request_queries: false,
    ...options.bot,
  };
  const maxPollMs = (options.maxPollSeconds ?? 30) * 1000;
  const calls: ApiCall[] = [];
  const sent: SentMessage[] = [];
  const drafts: FakeTelegram["drafts"] = [];
  const updates: Update[] = [];
  const failures = new Map<string, Failure[]>();
  const callCounts = new Map<string, number>();
  const holds: Array<{
    method: string;
    nth: number;
    arrived: () => void;
    clientGone: () => void;
    released: Promise<void>;
  }> = [];
  const files = new Map<string, { path: string; content: Buffer; delayMs: number }>();
  const chats = new Map<string, Chat>();
  const messageIds = new Map<string, number>();
  const answers = new Map<string, { text?: string }>();
  let tapCounter = 0;
  /** Held getUpdates calls: `wake` answers if updates arrived, `finish` answers regardless. */
  const pollWaiters = new Set<{ wake: () => void; finish: () => void }>();
  let nextUpdateId = 1;
  let fileCounter = 0;
  let webhook: { url: string; secret?: string } | undefined;
  /** Fires after every answered call, so waitFor re-checks without polling delay. */
  const changed = new EventEmitter();
  changed.setMaxListeners(0);

  const nextMessageId = (chatId: string) => {
    const id = (messageIds.get(chatId) ?? 0) + 1;
    messageIds.set(chatId, id);
    return id;
  };

  const fillMessage = (message: Message | undefined) => {
    if (!message) return;
    const chatId = String(message.chat.id);
    chats.set(chatId, message.chat);
    if (!message.message_id) (message as { message_id: number }).message_id = nextMessageId(chatId);
    else messageIds.set(chatId, Math.max(messageIds.get(chatId) ?? 0, message.message_id));
    if (!message.date) (message as { date: number }).date = Math.floor(Date.now() / 1000);
    // Telegram marks commands and @mentions itself; tests write plain text.
    if (message.text && !message.entities) {
      const entities = entitiesOf(message.text);
      if (entities.length > 0) (message as { entities: MessageEntity[] }).entities = entities;
    }
  };

  const complete = (input: UpdateInput): Update => {
    const update = { ...input, update_id: input.update_id ?? nextUpdateId++ } as Update;
    nextUpdateId = Math.max(nextUpdateId, update.update_id + 1);
    fillMessage(update.message);
    fillMessage(update.edited_message);
    fillMessage(update.channel_post);
    return update;
  };

  const handlers: Record<string, (params: Record<string, unknown>, call: ApiCall) => Promise<Reply> | Reply> = {
    getMe: () => ok(botUser),
    getUpdates: (params) => getUpdates(params),
    deleteWebhook: () => {
      webhook = undefined;
      return ok(true);
    },
    setWebhook: (params) => {
      webhook = { url: String(params.url), secret: params.secret_token as string | undefined };
      return ok(true);
    },
    getWebhookInfo: () => ok({ url: webhook?.url ?? "", has_custom_certificate: false, pending_update_count: 0 }),
    setMyCommands: () => ok(true),
    sendChatAction: (params) => (params.chat_id ? ok(true) : bad("Bad Request: chat_id is empty")),
    answerCallbackQuery: (params) => {
      const id = String(params.callback_query_id ?? "");
      if (String(params.text ?? "").length > 200) return bad("Bad Request: MESSAGE_TOO_LONG");
      if (!id || answers.has(id))
        return bad("Bad Request: query is too old and response timeout expired or query ID is invalid");
      answers.set(id, { text: params.text as string | undefined });
      return ok(true);
    },
    getFile: (params) => {
      const file = files.get(String(params.file_id));
      if (!file) return bad("Bad Request: invalid file_id");
      return ok({
        file_id: params.file_id,
        file_unique_id: `u-${params.file_id}`,
        file_size: file.content.length,
        file_path: file.path,
      });
    },
    sendMessage: (params, call) => sendMessage(params, call),
    sendDocument: (params, call) => sendFile("document", params, call),
    sendPhoto: (params, call) => sendFile("photo", params, call),
    sendVoice: (params, call) => sendVoice(params, call),
    editMessageText: (params) => editMessageText(params),
    sendMessageDraft: (params, call) => {
      const chatId = String(params.chat_id ?? "");
      if (chats.get(chatId)?.type !== "private") return bad("Bad Request: message drafts are only for private chats");
      if (!Number(params.draft_id)) return bad("Bad Request: draft_id must be non-zero");
      const visible = visibleOf(params);
      if ("error" in visible) return bad(visible.error);
      drafts.push({ chatId, draftId: Number(params.draft_id), text: visible.text, at: call.at });
      return ok(true);
    },
    deleteMessage: (params) => {
      const message = findSent(params);
      if (!message || message.deleted) return bad("Bad Request: message to delete not found");
      message.deleted = true;
      return ok(true);
    },
  };

  function findSent(params: Record<string, unknown>): SentMessage | undefined {
    return sent.find((m) => m.chatId === String(params.chat_id) && m.messageId === Number(params.message_id));
  }

  function editMessageText(params: Record<string, unknown>): Reply {
    const message = findSent(params);
    if (!message || message.deleted) return bad("Bad Request: message to edit not found");
    if (message.method !== "sendMessage") return bad("Bad Request: there is no text in the message to edit");
    const visible = visibleOf(params);
    if ("error" in visible) return bad(visible.error);
    const text = visible.text;
    if (!text.trim()) return bad("Bad Request: message text is empty");
    const keyboard = keyboardOf(params);
    if (typeof keyboard === "string") return bad(keyboard);
    if (text === (message.edits?.at(-1) ?? message.text) && sameKeyboard(keyboard, message.keyboard)) {
      return bad(
        "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message",
      );
    }
    message.edits = [...(message.edits ?? []), text];
    message.keyboard = keyboard;
    const chat = chats.get(message.chatId) ?? ({ id: Number(message.chatId), type: "private" } as Chat);
    return ok({ message_id: message.messageId, date: Math.floor(message.at / 1000), chat, from: botUser, text });
  }

  /** The text a reader sees of an edit or a draft, or Telegram's refusal of its HTML or its length. */
  function visibleOf(params: Record<string, unknown>): { text: string } | { error: string } {
    const text = String(params.text ?? "");
    const parsed = params.parse_mode === "HTML" ? parseHtml(text) : { text };
    if ("error" in parsed) return { error: `Bad Request: can't parse entities: ${parsed.error}` };
    return parsed.text.length > 4096 ? { error: "Bad Request: MESSAGE_TOO_LONG" } : parsed;
  }

  function getUpdates(params: Record<string, unknown>): Promise<Reply> | Reply {
    if (webhook)
      return {
        status: 409,
        body: {
          ok: false,
          error_code: 409,
          description:
            "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first",
        },
      };
    const offset = Number(params.offset ?? 0);
    if (offset > 0) {
      while (updates.length > 0 && updates[0].update_id < offset) updates.shift();
    }
    const limit = Math.min(100, Math.max(1, Number(params.limit ?? 100)));
    const available = () => updates.filter((u) => u.update_id >= offset).slice(0, limit);
    const now = available();
    const timeoutMs = Math.min(maxPollMs, Number(params.timeout ?? 0) * 1000);
    if (now.length > 0 || timeoutMs <= 0) return ok(now);
    return new Promise((resolve) => {
      const waiter = {
        finish: () => {
          clearTimeout(timer);
          pollWaiters.delete(waiter);
          resolve(ok(available()));
        },
        wake: () => {
          if (available().length > 0) waiter.finish();
        },
      };
      const timer = setTimeout(waiter.finish, timeoutMs);
      pollWaiters.add(waiter);
    });
  }

  function sendMessage(params: Record<string, unknown>, call: ApiCall): Reply {
    const chatId = String(params.chat_id ?? "");
    if (!chatId) return bad("Bad Request: chat_id is empty");
    const text = String(params.text ?? "");
    const parseMode = params.parse_mode as string | undefined;
    let visibleText = text;
    if (parseMode === "HTML") {
      const parsed = parseHtml(text);
      if ("error" in parsed) return bad(`Bad Request: can't parse entities: ${parsed.error}`);
      visibleText = parsed.text;
    }
    if (!visibleText.trim()) return bad("Bad Request: message text is empty");
    if (visibleText.length > 4096) return bad("Bad Request: message is too long");
    if (typeof keyboardOf(params) === "string") return bad(keyboardOf(params) as string);
    return ok(recordSent("sendMessage", chatId, visibleText, params, call, undefined));
  }

  function sendFile(field: "document" | "photo", params: Record<string, unknown>, call: ApiCall): Reply {
    const chatId = String(params.chat_id ?? "");
    const file = params[field];
    if (!chatId) return bad("Bad Request: chat_id is empty");
    if (!(file instanceof File)) return bad(`Bad Request: there is no ${field} in the request`);
    if (typeof keyboardOf(params) === "string") return bad(keyboardOf(params) as string);
    return ok(
      recordSent(`send${field[0].toUpperCase()}${field.slice(1)}`, chatId, String(params.caption ?? ""), params, call, {
        field,
        name: file.name,
        size: file.size,
      }),
    );
  }

  /** Like Telegram: a voice file, a caption of at most 1024 visible characters (HTML parsed when asked). */
  async function sendVoice(params: Record<string, unknown>, call: ApiCall): Promise<Reply> {
    const chatId = String(params.chat_id ?? "");
    const file = params.voice;
    if (!chatId) return bad("Bad Request: chat_id is empty");
    if (!(file instanceof File)) return bad("Bad Request: there is no voice in the request");
    let caption = String(params.caption ?? "");
    if (params.parse_mode === "HTML") {
      const parsed = parseHtml(caption);
      if ("error" in parsed) return bad(`Bad Request: can't parse entities: ${parsed.error}`);
      caption = parsed.text;
    }
    if (caption.length > 1024) return bad("Bad Request: message caption is too long");
    const data = Buffer.from(await file.arrayBuffer());
    const message = recordSent("sendVoice", chatId, caption, params, call, {
      field: "voice",
      name: file.name,
      size: file.size,
      data,
    });
    const duration = params.duration === undefined ? undefined : Number(params.duration);
    sent[sent.length - 1].duration = duration;
    return ok(message);
  }

  function recordSent(
    method: string,
    chatId: string,
    text: string,
    params: Record<string, unknown>,
    call: ApiCall,
    file: SentMessage["file"],
  ): Message {
    const messageId = nextMessageId(chatId);
    const reply = params.reply_parameters as { message_id?: number } | undefined;
    sent.push({
      method,
      chatId,
      text,
      parseMode: params.parse_mode as string | undefined,
      threadId: params.message_thread_id === undefined ? undefined : Number(params.message_thread_id),
      replyToId: reply?.message_id,
      file,
      messageId,
      at: call.at,
      keyboard: keyboardOf(params) as InlineKeyboardButton[][] | undefined,
    });
    const chat = chats.get(chatId) ?? ({ id: Number(chatId), type: "private", first_name: "someone" } as Chat);
    return { message_id: messageId, date: Math.floor(Date.now() / 1000), chat, from: botUser, text } as Message;
  }

  const server = createServer(async (req, res) => {
    try {
      await route(req, res);
    } catch (err) {
      sendJson(res, 500, { ok: false, error_code: 500, description: `fake server error: ${(err as Error).message}` });
    }
  });

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const fileMatch = /^\/file\/bot([^/]+)\/(.+)$/.exec(url.pathname);
    if (fileMatch) {
      const file = [...files.values()].find((f) => f.path === decodeURIComponent(fileMatch[2]));
      if (fileMatch[1] !== token || !file)
        return sendJson(res, 404, { ok: false, error_code: 404, description: "Not Found" });
      if (file.delayMs > 0) await new Promise((r) => setTimeout(r, file.delayMs));
      res.writeHead(200, { "content-type": "application/octet-stream", "content-length": file.content.length });
      res.end(file.content);
      return;
    }
    const match = /^\/bot([^/]+)\/(\w+)$/.exec(url.pathname);
    if (!match) return sendJson(res, 404, { ok: false, error_code: 404, description: "Not Found" });
    const [, requestToken, method] = match;
    const call: ApiCall = { method, params: await readParams(req, url), at: Date.now(), status: 0 };
    calls.push(call);
    const seen = (callCounts.get(method) ?? 0) + 1;
    callCounts.set(method, seen);
    const hold = holds.find((h) => h.method === method && h.nth === seen);
    if (hold) {
      // Like a platform that has not answered yet: if the client goes away meanwhile, nothing happened.
      let gone = false;
      res.on("close", () => {
        gone = !res.writableFinished;
        if (gone) hold.clientGone();
      });
      hold.arrived();
      await hold.released;
      if (gone || res.destroyed) {
        call.status = 0;
        changed.emit("change");
        return;
      }
    }
    const reply = await answer(requestToken, method, call);
    call.status = reply.status;
    if (!res.destroyed) sendJson(res, reply.status, reply.body);
    changed.emit("change");
  }

  async function answer(requestToken: string, method: string, call: ApiCall): Promise<Reply> {
    if (requestToken !== token)
      return { status: 401, body: { ok: false, error_code: 401, description: "Unauthorized" } };
    const failure = failures.get(method)?.shift();
    if (failure) {
      return {
        status: failure.status,
        body: {
          ok: false,
          error_code: failure.status,
          description: failure.description ?? defaultDescription(failure),
          ...(failure.retryAfter !== undefined ? { parameters: { retry_after: failure.retryAfter } } : {}),
        },
      };
    }
    const handler = handlers[method];
    if (!handler)
      return { status: 404, body: { ok: false, error_code: 404, description: "Not Found: method not found" } };
    return handler(call.params, call);
  }

  function pushUpdate(input: UpdateInput): Update {
    const update = complete(input);
    updates.push(update);
    for (const waiter of [...pollWaiters]) waiter.wake();
    return update;
  }

  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;

  return {
    apiRoot: `http://127.0.0.1:${port}`,
    token,
    botUser,
    pushUpdate,
    addFile(content, { fileName, delayMs = 0, filePath } = {}) {
      const id = `file-${++fileCounter}`;
      const buffer = Buffer.isBuffer(content) ? content : Buffer.from(content);
      files.set(id, { path: filePath ?? `documents/${fileName ?? `${id}.bin`}`, content: buffer, delayMs });
      return { file_id: id, file_unique_id: `u-${id}`, file_size: buffer.length };
    },
    calls,
    callsTo: (method) => calls.filter((c) => c.method === method),
    sent,
    drafts,
    failNext(method, failure, times = 1) {
      const list = failures.get(method) ?? [];
      for (let i = 0; i < times; i++) list.push(failure);
      failures.set(method, list);
    },
    clearFailures() {
      failures.clear();
    },
    holdCall(method, nth) {
      let arrived = () => {};
      let clientGone = () => {};
      let release = () => {};
      const hold = {
        method,
        nth: (callCounts.get(method) ?? 0) + nth,
        arrived: () => arrived(),
        clientGone: () => clientGone(),
        released: new Promise<void>((resolve) => {
          release = resolve;
        }),
      };
      holds.push(hold);
      return {
        arrived: new Promise<void>((resolve) => (arrived = resolve)),
        // The fake sees a killed client's connection close a moment after the kill, not at once.
        clientGone: new Promise<void>((resolve) => (clientGone = resolve)),
        release: () => release(),
      };
    },
    // A deadline, not a delay: generous, so a machine busy with other work does not fail a test.
    async waitFor(check, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const value = await check();
        if (value) return value;
        if (Date.now() > deadline) throw new Error(`fake Telegram: condition not met within ${timeoutMs} ms`);
        // Re-checked as soon as the bot makes a call (precise for benchmarks), or every 10 ms for other state.
        await new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            changed.off("change", done);
            resolve();
          };
          const timer = setTimeout(done, 10);
          changed.on("change", done);
        });
      }
    },
    async deliverWebhook(input) {
      if (!webhook) throw new Error("fake Telegram: no webhook registered");
      const update = complete(input);
      const response = await fetch(webhook.url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(webhook.secret ? { "x-telegram-bot-api-secret-token": webhook.secret } : {}),
        },
        body: JSON.stringify(update),
      });
      await response.arrayBuffer();
      return response.status;
    },
    pendingUpdates: () => updates.length,
    answers,
    tap(message, label, from, { id = `cbq-${++tapCounter}` } = {}) {
      const button = message.keyboard?.flat().find((b) => b.text === label);
      if (!button || !("callback_data" in button))
        throw new Error(`fake Telegram: no button "${label}" under that message`);
      const chat =
        chats.get(message.chatId) ?? ({ id: Number(message.chatId), type: "private", first_name: "someone" } as Chat);
      const shown = {
        message_id: message.messageId,
        date: Math.floor(message.at / 1000),
        chat,
        from: botUser,
        text: message.edits?.at(-1) ?? message.text,
        ...(message.threadId ? { message_thread_id: message.threadId, is_topic_message: true } : {}),
        reply_markup: { inline_keyboard: message.keyboard ?? [] },
      } as Message;
      pushUpdate({
        callback_query: { id, from, chat_instance: `ci-${message.chatId}`, message: shown, data: button.callback_data },
      });
      return id;
    },
    close: () =>
      new Promise((resolve) => {
        for (const waiter of [...pollWaiters]) waiter.finish();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

interface Reply {
  status: number;
  body: unknown;
}

/** The bot_command and mention entities Telegram would attach to a text (offsets in UTF-16 units, like JS strings). */
export function entitiesOf(text: string): MessageEntity[] {
  const entities: MessageEntity[] = [];
  for (const m of text.matchAll(/(^|\s)(\/[a-z0-9_]+(?:@[a-z0-9_]+)?)|(^|[^\w])(@[a-z0-9_]{5,32})/gi)) {
    const token = m[2] ?? m[4];
    const offset = (m.index ?? 0) + (m[1] ?? m[3] ?? "").length;
    entities.push({ type: m[2] ? "bot_command" : "mention", offset, length: token.length });
  }
  return entities;
}

/** The inline keyboard of a request, or Telegram's words for why it is refused. */
function keyboardOf(params: Record<string, unknown>): InlineKeyboardButton[][] | undefined | string {
  const markup = params.reply_markup as InlineKeyboardMarkup | undefined;
  if (!markup) return undefined;
  for (const button of markup.inline_keyboard.flat()) {
    if (!button.text) return "Bad Request: text buttons are unallowed in the inline keyboard";
    if ("callback_data" in button && Buffer.byteLength(button.callback_data) > 64)
      return "Bad Request: BUTTON_DATA_INVALID";
  }
  return markup.inline_keyboard.length > 0 ? markup.inline_keyboard : undefined;
}

function sameKeyboard(a: InlineKeyboardButton[][] | undefined, b: InlineKeyboardButton[][] | undefined): boolean {
  return JSON.stringify(a ?? []) === JSON.stringify(b ?? []);
}

function ok(result: unknown): Reply {
  return { status: 200, body: { ok: true, result } };
}

function bad(description: string): Reply {
  return { status: 400, body: { ok: false, error_code: 400, description } };
}

function defaultDescription(failure: Failure): string {
  if (failure.status === 413) return "Request Entity Too Large";
  if (failure.status === 429) return `Too Many Requests: retry after ${failure.retryAfter ?? 1}`;
  if (failure.status >= 500) return "Internal Server Error";
  if (failure.status === 400) return 'Bad Request: can\'t parse entities: Unsupported start tag "x" at byte offset 0';
  return "Error";
}

/** Telegram's HTML parse mode: a fixed set of tags, properly nested, and only &lt; &gt; &amp; &quot; entities. */
export function parseHtml(html: string): { text: string } | { error: string } {
  const stack: string[] = [];
  let text = "";
  const pattern = /<(\/?)([a-z][\w-]*)((?:\s[^>]*)?)>|&(#\d+|#x[\da-f]+|[a-z]+);|[<&]|[^<&]+/gi;
  for (const m of html.matchAll(pattern)) {
    const [raw, closing, name, , entity] = m;
    const offset = Buffer.byteLength(html.slice(0, m.index));
    if (name) {
      const tag = name.toLowerCase();
      if (!HTML_TAGS.has(tag)) return { error: `Unsupported start tag "${tag}" at byte offset ${offset}` };
      if (closing) {
        if (stack.pop() !== tag)
          return { error: `Unmatched end tag at byte offset ${offset}, expected "</${stack.at(-1) ?? ""}>"` };
      } else stack.push(tag);
    } else if (entity) {
      const named: Record<string, string> = { lt: "<", gt: ">", amp: "&", quot: '"' };
      if (entity.startsWith("#x")) text += String.fromCodePoint(Number.parseInt(entity.slice(2), 16));
      else if (entity.startsWith("#")) text += String.fromCodePoint(Number.parseInt(entity.slice(1), 10));
      else if (named[entity]) text += named[entity];
      else return { error: `Unsupported entity "&${entity};" at byte offset ${offset}` };
    } else if (raw === "<" || raw === "&") {
      return { error: `Character "${raw}" is reserved and must be escaped at byte offset ${offset}` };
    } else text += raw;
  }
  if (stack.length > 0) return { error: `Can't find end tag corresponding to start tag "${stack.at(-1)}"` };
  return { text };
}

async function readParams(req: IncomingMessage, url: URL): Promise<Record<string, unknown>> {
  const params: Record<string, unknown> = Object.fromEntries(url.searchParams);
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks);
  if (body.length === 0) return params;
  const type = req.headers["content-type"] ?? "";
  if (type.includes("application/json")) return { ...params, ...(JSON.parse(body.toString("utf8")) as object) };
  if (type.includes("multipart/form-data")) {
    Object.assign(params, parseMultipart(body, type));
    return params;
  }
  if (type.includes("application/x-www-form-urlencoded")) {
    const form = await new Request("http://127.0.0.1/", {
      method: "POST",
      headers: { "content-type": type },
      body,
    }).formData();
    for (const [key, value] of form.entries()) {
      params[key] = typeof value === "string" ? parseFormValue(value) : value;
    }
  }
  return params;
}

/**
 * A lenient multipart parser: grammy writes `filename=name` unquoted, which undici's strict
 * FormData parser rejects (Telegram accepts it). Files sent as `attach://KEY` are resolved to
 * the part named KEY, so a handler sees a File under the field's own name.
 */
function parseMultipart(body: Buffer, type: string): Record<string, unknown> {
  const boundary = /boundary=("?)([^";]+)\1/.exec(type)?.[2];
  if (!boundary) throw new Error("multipart body without a boundary");
  const parts: Record<string, unknown> = {};
  const text = body.toString("latin1");
  for (const chunk of text.split(`--${boundary}`).slice(1)) {
    if (chunk.startsWith("--")) break;
    const end = chunk.indexOf("\r\n\r\n");
    const head = chunk.slice(2, end);
    const content = Buffer.from(chunk.slice(end + 4, chunk.length - 2), "latin1");
    const name = /name="?([^";\r\n]+)"?/.exec(head.replace(/filename=[^;\r\n]*/i, ""))?.[1];
    const filename = /filename="?([^";\r\n]+)"?/i.exec(head)?.[1];
    if (!name) continue;
    parts[name] = filename ? new File([content], filename) : parseFormValue(content.toString("utf8"));
  }
  for (const [key, value] of Object.entries(parts)) {
    if (typeof value === "string" && value.startsWith("attach://")) parts[key] = parts[value.slice("attach://".length)];
  }
  return parts;
}

/** grammy sends non-file fields of a multipart request JSON-encoded when they are objects. */
function parseFormValue(value: string): unknown {
  if (/^[[{]/.test(value)) {
    try {
      return JSON.parse(value);
    } catch {
      return value;
    }
  }
  return value;
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) return;
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}
