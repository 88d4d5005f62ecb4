import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { type WebSocket, WebSocketServer } from "ws";

/**
 * A fake Discord for tests and benchmarks: the REST API under /api/v10 and a JSON gateway
 * (no compression: discord.js only asks for zlib-stream when zlib-sync is installed). It records
 * every call, echoes the bot's own messages back over the gateway like Discord does, keeps the
 * events of each session for RESUME, and can be told to fail requests or drop the connection.
 */

export interface FakeUser {
  id: string;
  username: string;
  bot?: boolean;
}

export interface FakeGuild {
  id: string;
  name: string;
  channels: Array<{ id: string; name: string }>;
  threads?: Array<{ id: string; name: string; parentId: string }>;
}

export interface RecordedCall {
  method: string;
  /** Path below /api/v10, e.g. `/channels/20/messages`; other paths as requested. */
  path: string;
  status: number;
  body?: unknown;
  at: number;
}

export interface SentMessage {
  id: string;
  channelId: string;
  content: string;
  /** The message this one replies to (message_reference). */
  replyTo?: string;
  files: Array<{ name: string; size: number; data?: Buffer }>;
  /** Message flags as posted (8192: a voice message). */
  flags?: number;
  /** The attachments' metadata as posted (a voice message's duration_secs and waveform). */
  attachments?: Array<{ id?: number | string; filename?: string; duration_secs?: number; waveform?: string }>;
  at: number;
  /** Contents it was edited to (PATCH), in order. */
  edits?: string[];
  /** Removed with DELETE. */
  deleted?: boolean;
  /** The action rows of buttons under it now (as posted, replaced by a PATCH that names them). */
  components?: ActionRow[];
}

export interface ActionRow {
  type: 1;
  components: Array<{ type: 2; label?: string; custom_id?: string; style?: number }>;
}

/** How the bot answered an interaction (its callback), and what it sent after (follow-ups). */
export interface InteractionAnswer {
  /** 4: a message (with `content`, `flags` 64 = ephemeral); 6: a deferred update. */
  type: number;
  content?: string;
  flags?: number;
  /** Milliseconds after the interaction was dispatched. */
  afterMs: number;
  followUps: Array<{ content?: string; flags?: number }>;
}

export interface GatewayRecord {
  op: number;
  /** For IDENTIFY and RESUME, the session involved. */
  sessionId?: string;
  at: number;
}

export interface DispatchInput {
  channelId: string;
  author: FakeUser;
  content: string;
  /** Set for guild messages (threads included); absent for DMs. */
  guildId?: string;
  /** Users mentioned; a reply to someone adds them, like Discord does. */
  mentions?: FakeUser[];
  /** Id of the message this one replies to (must be known to the fake: dispatched or sent). */
  replyTo?: string;
  /** `url` replaces the fake's own address for the file (a message pointing elsewhere). */
  attachments?: Array<{
    filename: string;
    data: Buffer | string;
    contentType?: string;
    durationSecs?: number;
    url?: string;
  }>;
  /** Makes this a forward (message_reference type 1) of a message with this content and these attachments. */
  forward?: boolean;
}

export interface FailureScript {
  method?: string;
  /** Matched against the path below /api/v10. */
  path?: RegExp;
  status: number;
  /** For 429: seconds to wait, sent as Retry-After and in the body. */
  retryAfter?: number;
  /** How many matching requests fail (default 1). */
  times?: number;
}

export interface FakeDiscordOptions {
  bot?: FakeUser;
  guilds?: FakeGuild[];
  /** Gateway heartbeat interval sent in HELLO. */
  heartbeatIntervalMs?: number;
  /** When set, any other token gets 401 from REST, like a revoked or mistyped token. */
  token?: string;
  /** Close every IDENTIFY with this code, e.g. 4014 when the Message Content intent is not enabled. */
  refuseIdentify?: number;
  /** Answers every voice message (flag 8192) with a 400, as where the API does not allow one. */
  refuseVoiceMessages?: boolean;
}

export interface FakeDiscord {
  /** For DISCORD_API_URL / `rest.api`: discord.js appends /v10. */
  apiUrl: string;
  gatewayUrl: string;
  bot: FakeUser;
  calls: RecordedCall[];
  sent: SentMessage[];
  gateway: GatewayRecord[];
  /** Query strings of gateway connections (discord.js sends v and encoding). */
  connections: string[];
  /** Sends MESSAGE_CREATE to every session (buffered for a disconnected one until it resumes). */
  dispatchMessage(input: DispatchInput): Record<string, unknown>;
  /** Any other dispatch event, e.g. THREAD_CREATE. */
  dispatch(type: string, data: unknown): void;
  /**
   * Cuts every gateway connection without a close frame. On RESUME the fake replays the events
   * after the client's sequence number, or after `replayAfterSeq` to replay some twice.
   */
  dropConnection(options?: { replayAfterSeq?: number; invalidateSession?: boolean }): void;
  failNext(script: FailureScript): void;
  /** Ends every scripted failure (the end of an outage). */
  clearFailures(): void;
  /**
   * `user` presses the button labelled `label` under a sent message: dispatches INTERACTION_CREATE
   * (type 3, the message with its buttons as they are now). Returns the interaction's id.
   */
  tap(message: SentMessage, label: string, user: FakeUser): string;
  /** Answers to interactions by id; a callback after 3 s or a second one is refused like Discord does. */
  interactions: Map<string, InteractionAnswer>;
  /** Calls `listener` for each message the bot posts, as it is stored; returns an unsubscribe function. */
  onSent(listener: (message: SentMessage) => void): () => void;
  /** Resolves with the first truthy value of `predicate`, polled; rejects after `timeoutMs`. */
  waitFor<T>(
    predicate: () => T | undefined | null | false | Promise<T | undefined | null | false>,
    timeoutMs?: number,
  ): Promise<T>;
  /** Number of open, identified gateway connections. */
  readonly liveConnections: number;
  close(): Promise<void>;
}

const DISCORD_EPOCH = 1420070400000n;

/** A token of Discord's shape (id.timestamp.hmac) that the fake accepts unless told otherwise. */
export const FAKE_DISCORD_TOKEN = "MTAwMDAwMDAwMDAwMDAwMDAw.GfAke0.fake-discord-token-for-tests";
const API_PREFIX = "/api/v10";

interface Session {
  id: string;
  seq: number;
  events: Array<{ s: number; t: string; d: unknown }>;
  socket?: WebSocket;
  /** Replays after this sequence on the next RESUME instead of the client's. */
  replayOverride?: number;
  invalid?: boolean;
}

export async function startFakeDiscord(options: FakeDiscordOptions = {}): Promise<FakeDiscord> {
  const bot: FakeUser = options.bot ?? { id: "900000000000000001", username: "pincer", bot: true };
  const guilds = options.guilds ?? [];
  const heartbeatIntervalMs = options.heartbeatIntervalMs ?? 41_250;
  const calls: RecordedCall[] = [];
  const sent: SentMessage[] = [];
  const gatewayLog: GatewayRecord[] = [];
  const connectionQueries: string[] = [];
  const failures: FailureScript[] = [];
  const sentListeners = new Set<(message: SentMessage) => void>();
  const sessions = new Map<string, Session>();
  const messages = new Map<string, Record<string, unknown>>();
  const attachments = new Map<string, { data: Buffer; contentType: string }>();
  const interactions = new Map<string, InteractionAnswer>();
  /** Interactions dispatched and not yet answered: their token and when they were sent. */
  const openInteractions = new Map<string, { token: string; at: number }>();
  let counter = 0n;

  const snowflake = (): string => (((BigInt(Date.now()) - DISCORD_EPOCH) << 22n) | (counter++ & 0xfffn)).toString();

  const server = createServer((req, res) => {
    handleHttp(req, res).catch((err: Error) => sendJson(res, 500, { message: err.message, code: 0 }));
  });
  const wss = new WebSocketServer({ server });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  const base = `http://127.0.0.1:${port}`;
  const gatewayUrl = `ws://127.0.0.1:${port}/gateway`;

  function channelById(id: string): Record<string, unknown> | undefined {
    for (const guild of guilds) {
      const channel = guild.channels.find((c) => c.id === id);
      if (channel)
        return { id, type: 0, name: channel.name, guild_id: guild.id, position: 0, permission_overwrites: [] };
      const thread = guild.threads?.find((t) => t.id === id);
      if (thread) return threadPayload(guild.id, thread);
    }
    return undefined;
  }

  function userPayload(user: FakeUser): Record<string, unknown> {
    return {
      id: user.id,
      username: user.username,
      global_name: null,
      discriminator: "0",
      avatar: null,
      bot: user.bot ?? false,
    };
  }

  function messagePayload(input: DispatchInput & { id: string }): Record<string, unknown> {
    const referenced = input.replyTo ? messages.get(input.replyTo) : undefined;
    const mentions = [...(input.mentions ?? [])];
    const repliedAuthor = referenced?.author as FakeUser | undefined;
    if (repliedAuthor && !mentions.some((m) => m.id === repliedAuthor.id)) mentions.push(repliedAuthor);
    const files = (input.attachments ?? []).map((file) => {
      const id = snowflake();
      const data = Buffer.from(file.data);
      const contentType = file.contentType ?? "application/octet-stream";
      attachments.set(id, { data, contentType });
      return {
        id,
        filename: file.filename,
        size: data.length,
        url: file.url ?? `${base}/attachments/${input.channelId}/${id}/${encodeURIComponent(file.filename)}`,
        proxy_url: `${base}/attachments/${input.channelId}/${id}/${encodeURIComponent(file.filename)}`,
        content_type: contentType,
        ...(file.durationSecs !== undefined ? { duration_secs: file.durationSecs, waveform: "AAAA" } : {}),
      };
    });
    if (input.forward) {
      return {
        id: input.id,
        type: 0,
        channel_id: input.channelId,
        channel_type: (channelById(input.channelId)?.type as number | undefined) ?? 1,
        ...(input.guildId
          ? { guild_id: input.guildId, member: { roles: [], joined_at: new Date(0).toISOString() } }
          : {}),
        author: userPayload(input.author),
        content: "",
        timestamp: new Date().toISOString(),
        edited_timestamp: null,
        tts: false,
        mention_everyone: false,
        mentions: [],
        mention_roles: [],
        attachments: [],
        embeds: [],
        pinned: false,
        flags: 1 << 14,
        message_reference: { type: 1, message_id: snowflake(), channel_id: snowflake() },
        message_snapshots: [
          {
            message: {
              type: 0,
              content: input.content,
              attachments: files,
              embeds: [],
              timestamp: new Date().toISOString(),
              edited_timestamp: null,
              flags: 0,
              mentions: [],
              mention_roles: [],
            },
          },
        ],
      };
    }
    return {
      id: input.id,
      type: referenced ? 19 : 0,
      channel_id: input.channelId,
      // Discord sends the channel's type with each message; discord.js needs it to build an uncached DM channel.
      channel_type: (channelById(input.channelId)?.type as number | undefined) ?? 1,
      ...(input.guildId
        ? { guild_id: input.guildId, member: { roles: [], joined_at: new Date(0).toISOString() } }
        : {}),
      author: userPayload(input.author),
      content: input.content,
      timestamp: new Date().toISOString(),
      edited_timestamp: null,
      tts: false,
      mention_everyone: false,
      mentions: mentions.map(userPayload),
      mention_roles: [],
      attachments: files,
      embeds: [],
      pinned: false,
      flags: 0,
      ...(referenced
        ? {
            message_reference: {
              type: 0,
              message_id: input.replyTo,
              channel_id: input.channelId,
              guild_id: input.guildId,
            },
            referenced_message: referenced,
          }
        : {}),
    };
  }

  function dispatchToAll(t: string, d: unknown): void {
    for (const session of sessions.values()) {
      if (session.invalid) continue;
      const event = { s: ++session.seq, t, d };
      session.events.push(event);
      session.socket?.send(JSON.stringify({ op: 0, ...event }));
    }
  }

  function dispatchMessage(input: DispatchInput): Record<string, unknown> {
    const payload = messagePayload({ ...input, id: snowflake() });
    messages.set(payload.id as string, payload);
    dispatchToAll("MESSAGE_CREATE", payload);
    return payload;
  }

  async function handleHttp(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", base);
    const raw = await readBody(req);
    const method = req.method ?? "GET";
    const path = url.pathname.startsWith(API_PREFIX) ? url.pathname.slice(API_PREFIX.length) : url.pathname;
    const body = await parseBody(raw, req.headers["content-type"]);
    const record = (status: number) => calls.push({ method, path, status, body: body.json, at: Date.now() });

    const attachment = /^\/attachments\/\d+\/(\d+)\//.exec(url.pathname);
    if (attachment) {
      const file = attachments.get(attachment[1]);
      record(file ? 200 : 404);
      if (!file) return sendJson(res, 404, { message: "404: Not Found", code: 0 });
      res.writeHead(200, { "content-type": file.contentType, "content-length": file.data.length });
      res.end(file.data);
      return;
    }
    if (!url.pathname.startsWith(API_PREFIX)) {
      record(404);
      return sendJson(res, 404, { message: "404: Not Found", code: 0 });
    }
    // Interaction callbacks and follow-ups are authorised by the interaction's token, not the bot's.
    const callback = /^\/interactions\/(\d+)\/([\w-]+)\/callback$/.exec(path);
    if (method === "POST" && callback) {
      const open = openInteractions.get(callback[1]);
      const json = (body.json ?? {}) as { type?: number; data?: { content?: string; flags?: number } };
      if (interactions.has(callback[1])) {
        record(400);
        return sendJson(res, 400, { message: "Interaction has already been acknowledged.", code: 40060 });
      }
      if (!open || open.token !== callback[2] || Date.now() - open.at > 3000) {
        record(404);
        return sendJson(res, 404, { message: "Unknown interaction", code: 10062 });
      }
      interactions.set(callback[1], {
        type: Number(json.type),
        content: json.data?.content,
        flags: json.data?.flags,
        afterMs: Date.now() - open.at,
        followUps: [],
      });
      record(204);
      res.writeHead(204).end();
      return;
    }
    const followUp = /^\/webhooks\/(\d+)\/([\w-]+)$/.exec(path);
    if (method === "POST" && followUp) {
      const id = [...openInteractions].find(([, o]) => o.token === followUp[2])?.[0];
      const answer = id ? interactions.get(id) : undefined;
      if (!answer) {
        record(404);
        return sendJson(res, 404, { message: "Unknown Webhook", code: 10015 });
      }
      const json = (body.json ?? {}) as { content?: string; flags?: number };
      answer.followUps.push({ content: json.content, flags: json.flags });
      record(200);
      return sendJson(res, 200, { id: snowflake(), content: json.content ?? "", flags: json.flags ?? 0 });
    }
    const auth = String(req.headers.authorization ?? "");
    if (!auth.startsWith("Bot ") || (options.token !== undefined && auth !== `Bot ${options.token}`)) {
      record(401);
      return sendJson(res, 401, { message: "401: Unauthorized", code: 0 });
    }
    const failure = failures.find((f) => (!f.method || f.method === method) && (!f.path || f.path.test(path)));
    if (failure) {
      failure.times = (failure.times ?? 1) - 1;
      if (failure.times <= 0) failures.splice(failures.indexOf(failure), 1);
      record(failure.status);
      if (failure.status === 429) {
        const retryAfter = failure.retryAfter ?? 0.1;
        res.writeHead(429, {
          "content-type": "application/json",
          "retry-after": String(retryAfter),
          "x-ratelimit-limit": "5",
          "x-ratelimit-remaining": "0",
          "x-ratelimit-reset-after": String(retryAfter),
          "x-ratelimit-bucket": "fake-bucket",
          "x-ratelimit-scope": "user",
        });
        res.end(JSON.stringify({ message: "You are being rate limited.", retry_after: retryAfter, global: false }));
        return;
      }
      return sendJson(res, failure.status, { message: `fake failure ${failure.status}`, code: 0 });
    }

    const route = /^\/channels\/(\d+)(\/messages|\/typing)?$/.exec(path);
    const channelId = route?.[1] ?? "";
    if (method === "GET" && path === "/gateway/bot") {
      record(200);
      return sendJson(res, 200, {
        url: gatewayUrl,
        shards: 1,
        session_start_limit: { total: 1000, remaining: 999, reset_after: 0, max_concurrency: 1 },
      });
    }
    if (method === "GET" && path === "/gateway") {
      record(200);
      return sendJson(res, 200, { url: gatewayUrl });
    }
    if (method === "GET" && path === "/users/@me") {
      record(200);
      return sendJson(res, 200, userPayload(bot));
    }
    if (method === "GET" && route && !route[2]) {
      const channel = channelById(channelId) ?? { id: channelId, type: 1, recipients: [], last_message_id: null };
      record(200);
      return sendJson(res, 200, channel);
    }
    if (method === "POST" && route?.[2] === "/typing") {
      record(204);
      res.writeHead(204).end();
      return;
    }
    if (method === "POST" && route?.[2] === "/messages") {
      const json = (body.json ?? {}) as {
        content?: string;
        message_reference?: { message_id?: string };
        components?: ActionRow[];
        flags?: number;
        attachments?: SentMessage["attachments"];
      };
      const content = json.content ?? "";
      if (content.length > 2000 || !validComponents(json.components)) {
        record(400);
        return sendJson(res, 400, { message: "Invalid Form Body", code: 50035 });
      }
      // Like Discord: a voice message is one audio file with its length and waveform, and nothing else.
      const voice = json.flags !== undefined && (json.flags & (1 << 13)) !== 0;
      const meta = json.attachments?.[0];
      const malformed = content || body.files.length !== 1 || meta?.duration_secs === undefined || !meta.waveform;
      if (voice && (malformed || options.refuseVoiceMessages)) {
        record(400);
        return sendJson(res, 400, { message: "Cannot send a voice message with this content", code: 50161 });
      }
      const guildId = (channelById(channelId)?.guild_id as string | undefined) ?? undefined;
      const replyTo = json.message_reference?.message_id;
      const payload = messagePayload({
        id: snowflake(),
        channelId,
        guildId,
        author: bot,
        content,
        replyTo: replyTo && messages.has(replyTo) ? replyTo : undefined,
      });
      if (json.components?.length) payload.components = json.components;
      messages.set(payload.id as string, payload);
      const message: SentMessage = {
        id: payload.id as string,
        channelId,
        content,
        replyTo,
        files: body.files,
        ...(json.flags !== undefined ? { flags: json.flags } : {}),
        ...(json.attachments ? { attachments: json.attachments } : {}),
        at: Date.now(),
        ...(json.components?.length ? { components: json.components } : {}),
      };
      sent.push(message);
      for (const listener of sentListeners) listener(message);
      record(200);
      sendJson(res, 200, payload);
      // Discord echoes the bot's own messages over the gateway; the adapter must ignore them.
      dispatchToAll("MESSAGE_CREATE", payload);
      return;
    }
    const one = /^\/channels\/(\d+)\/messages\/(\d+)$/.exec(path);
    const target = one ? sent.find((m) => m.channelId === one[1] && m.id === one[2] && !m.deleted) : undefined;
    if (one && !target && (method === "PATCH" || method === "DELETE")) {
      record(404);
      return sendJson(res, 404, { message: "Unknown Message", code: 10008 });
    }
    if (method === "PATCH" && target) {
      const json = (body.json ?? {}) as { content?: string; components?: ActionRow[] };
      const content = String(json.content ?? "");
      if (!validComponents(json.components)) {
        record(400);
        return sendJson(res, 400, { message: "Invalid Form Body", code: 50035 });
      }
      target.edits = [...(target.edits ?? []), content];
      // Like Discord: components left out of the PATCH stay; an empty list removes them.
      if (json.components) target.components = json.components.length > 0 ? json.components : undefined;
      const payload = {
        ...(messages.get(target.id) ?? {}),
        content,
        components: target.components ?? [],
        edited_timestamp: new Date().toISOString(),
      };
      messages.set(target.id, payload);
      record(200);
      return sendJson(res, 200, payload);
    }
    if (method === "DELETE" && target) {
      target.deleted = true;
      record(204);
      res.writeHead(204).end();
      return;
    }
    record(404);
    sendJson(res, 404, { message: "404: Not Found", code: 0 });
  }

  wss.on("connection", (socket, req) => {
    connectionQueries.push(new URL(req.url ?? "/", base).search);
    let session: Session | undefined;
    socket.send(JSON.stringify({ op: 10, d: { heartbeat_interval: heartbeatIntervalMs } }));
    socket.on("message", (data) => {
      const payload = JSON.parse(String(data)) as { op: number; d: Record<string, unknown> | number | null };
      const d = (payload.d ?? {}) as Record<string, unknown>;
      switch (payload.op) {
        case 1: // HEARTBEAT
          gatewayLog.push({ op: 1, at: Date.now() });
          socket.send(JSON.stringify({ op: 11 }));
          break;
        case 2: {
          // IDENTIFY: a new session, READY, then each guild.
          if (options.refuseIdentify) {
            gatewayLog.push({ op: 2, at: Date.now() });
            socket.close(options.refuseIdentify, "refused by the fake");
            break;
          }
          session = { id: `session-${sessions.size + 1}`, seq: 0, events: [], socket };
          sessions.set(session.id, session);
          gatewayLog.push({ op: 2, sessionId: session.id, at: Date.now() });
          const own = session;
          const send = (t: string, payloadData: unknown) => {
            const event = { s: ++own.seq, t, d: payloadData };
            own.events.push(event);
            socket.send(JSON.stringify({ op: 0, ...event }));
          };
          send("READY", {
            v: 10,
            user: userPayload(bot),
            guilds: guilds.map((g) => ({ id: g.id, unavailable: true })),
            session_id: session.id,
            resume_gateway_url: gatewayUrl,
            shard: [0, 1],
            application: { id: bot.id, flags: 0 },
          });
          for (const guild of guilds) send("GUILD_CREATE", guildPayload(guild));
          break;
        }
        case 6: {
          // RESUME: replay what the client missed, then RESUMED; an unknown session is invalid.
          const resumed = sessions.get(String(d.session_id));
          gatewayLog.push({ op: 6, sessionId: String(d.session_id), at: Date.now() });
          if (!resumed || resumed.invalid) {
            socket.send(JSON.stringify({ op: 9, d: false }));
            break;
          }
          session = resumed;
          resumed.socket = socket;
          const after = resumed.replayOverride ?? Number(d.seq);
          resumed.replayOverride = undefined;
          for (const event of resumed.events.filter((e) => e.s > after))
            socket.send(JSON.stringify({ op: 0, ...event }));
          const event = { s: ++resumed.seq, t: "RESUMED", d: {} };
          resumed.events.push(event);
          socket.send(JSON.stringify({ op: 0, ...event }));
          break;
        }
        default:
          break;
      }
    });
    socket.on("close", () => {
      if (session?.socket === socket) session.socket = undefined;
    });
  });

  // A deadline, not a delay: generous, so a machine busy with other work does not fail a test.
  async function waitFor<T>(
    predicate: () => T | undefined | null | false | Promise<T | undefined | null | false>,
    timeoutMs = 15_000,
  ): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await predicate();
      if (value) return value;
      if (Date.now() > deadline) throw new Error(`fake Discord: condition not met within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  return {
    apiUrl: `${base}/api`,
    gatewayUrl,
    bot,
    calls,
    sent,
    gateway: gatewayLog,
    connections: connectionQueries,
    dispatchMessage,
    dispatch: dispatchToAll,
    dropConnection(opts = {}) {
      for (const session of sessions.values()) {
        if (opts.replayAfterSeq !== undefined) session.replayOverride = opts.replayAfterSeq;
        if (opts.invalidateSession) session.invalid = true;
      }
      for (const client of wss.clients) client.terminate();
    },
    failNext(script) {
      failures.push({ ...script });
    },
    clearFailures() {
      failures.length = 0;
    },
    interactions,
    tap(message, label, user) {
      const button = message.components?.flatMap((row) => row.components).find((b) => b.label === label);
      if (!button?.custom_id) throw new Error(`fake Discord: no button "${label}" under that message`);
      const id = snowflake();
      const token = `token-${id}`;
      const channel = channelById(message.channelId) ?? {
        id: message.channelId,
        type: 1,
        recipients: [userPayload(user)],
      };
      const guildId = channel.guild_id as string | undefined;
      openInteractions.set(id, { token, at: Date.now() });
      dispatchToAll("INTERACTION_CREATE", {
        id,
        application_id: bot.id,
        type: 3,
        token,
        version: 1,
        data: { custom_id: button.custom_id, component_type: 2 },
        channel_id: message.channelId,
        channel,
        ...(guildId
          ? {
              guild_id: guildId,
              member: { user: userPayload(user), roles: [], joined_at: new Date(0).toISOString(), permissions: "0" },
            }
          : { user: userPayload(user) }),
        message: messages.get(message.id),
        app_permissions: "0",
        locale: "en-US",
        entitlements: [],
        authorizing_integration_owners: {},
        context: guildId ? 0 : 1,
      });
      return id;
    },
    onSent(listener) {
      sentListeners.add(listener);
      return () => sentListeners.delete(listener);
    },
    waitFor,
    get liveConnections() {
      return [...sessions.values()].filter((s) => s.socket && !s.invalid).length;
    },
    close: () =>
      new Promise((resolve) => {
        for (const client of wss.clients) client.terminate();
        wss.close();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Discord's limits on buttons: 5 rows of 5, labels up to 80 characters, custom ids of 1 to 100. */
function validComponents(rows: ActionRow[] | undefined): boolean {
  if (!rows) return true;
  if (rows.length > 5) return false;
  return rows.every(
    (row) =>
      row.type === 1 &&
      row.components.length >= 1 &&
      row.components.length <= 5 &&
      row.components.every(
        (b) =>
          b.type === 2 &&
          (b.label ?? "").length <= 80 &&
          (b.custom_id ?? "").length >= 1 &&
          (b.custom_id ?? "").length <= 100,
      ),
  );
}

function threadPayload(
  guildId: string,
  thread: { id: string; name: string; parentId: string },
): Record<string, unknown> {
  return {
    id: thread.id,
    type: 11,
    name: thread.name,
    guild_id: guildId,
    parent_id: thread.parentId,
    owner_id: "1",
    message_count: 0,
    member_count: 1,
    thread_metadata: {
      archived: false,
      auto_archive_duration: 1440,
      archive_timestamp: new Date(0).toISOString(),
      locked: false,
    },
  };
}

function guildPayload(guild: FakeGuild): Record<string, unknown> {
  return {
    id: guild.id,
    name: guild.name,
    unavailable: false,
    owner_id: "1",
    member_count: 2,
    large: false,
    joined_at: new Date(0).toISOString(),
    features: [],
    roles: [
      {
        id: guild.id,
        name: "@everyone",
        permissions: "1024",
        position: 0,
        color: 0,
        hoist: false,
        managed: false,
        mentionable: false,
      },
    ],
    emojis: [],
    stickers: [],
    members: [],
    presences: [],
    voice_states: [],
    channels: guild.channels.map((c, position) => ({
      id: c.id,
      type: 0,
      name: c.name,
      position,
      permission_overwrites: [],
    })),
    threads: (guild.threads ?? []).map((t) => threadPayload(guild.id, t)),
  };
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** JSON bodies, and the multipart form discord.js sends with files (payload_json plus files[n]). */
async function parseBody(
  raw: Buffer,
  contentType: string | undefined,
): Promise<{ json?: unknown; files: Array<{ name: string; size: number; data: Buffer }> }> {
  if (raw.length === 0) return { files: [] };
  if (contentType?.startsWith("multipart/form-data")) {
    const form = await new Response(raw, { headers: { "content-type": contentType } }).formData();
    const files: Array<{ name: string; size: number; data: Buffer }> = [];
    let json: unknown;
    for (const [key, value] of form.entries()) {
      if (key === "payload_json") json = JSON.parse(String(value));
      else if (typeof value !== "string")
        files.push({ name: value.name, size: value.size, data: Buffer.from(await value.arrayBuffer()) });
    }
    return { json, files };
  }
  return { json: JSON.parse(raw.toString("utf8")), files: [] };
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}
