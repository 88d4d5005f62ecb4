import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { readFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "pino";
import { isPairedChannel } from "../access/policy.js";
import { listSkills } from "../agent/skills.js";
import type { App } from "../app.js";
import type { Channel } from "../bus/channel.js";
import { agentOf, agentSessionKey, type ChannelName, MAIN_AGENT, sessionKeyOf } from "../bus/types.js";
import { peopleRemove, peopleRole } from "../cli/people.js";
import { isLoopback, type WebAddr } from "../config/config.js";
import { skillDirs } from "../paths.js";
import { LIMIT_FIELDS } from "../store/types.js";
import {
  bearerMatches,
  HttpError,
  isLoopbackHost,
  readJson,
  send,
  sendJson,
  type TextField,
  textFields,
} from "./http.js";
import { LOCKED_PAGE, renderMain, renderShell } from "./page.js";
import { renderChatLog, renderHistory, renderSections } from "./sections.js";
import { WebSessions } from "./sessions.js";
import { SseHub } from "./sse.js";
import { channelStates, collectState, healthOf } from "./state.js";
import { loadWebToken, secretsEqual } from "./token.js";

/** The web chat as the server sees it (implemented by channels/web, which the server must not import). */
export interface WebChatPort {
  send(chatId: string, text: string): Promise<boolean>;
  listen(listener: (event: { chatId: string; type: string }) => void): () => void;
  /** A spoken reply's file, by the id its chat event gave. */
  voiceNote(chatId: string, id: string): string | undefined;
}

export type ControlPage = NonNullable<Awaited<ReturnType<typeof startControlPage>>>;

/** The page's address as a browser should use it: a wildcard bind is reached through loopback. */
export function pageUrl(addr: WebAddr, token?: string): string {
  const host = addr.host === "0.0.0.0" ? "127.0.0.1" : addr.host === "::" ? "::1" : addr.host;
  const base = `http://${host.includes(":") ? `[${host}]` : host}:${addr.port}/`;
  return token ? `${base}?token=${encodeURIComponent(token)}` : base;
}

const CHAT_ID = /^[A-Za-z0-9_-]{1,64}$/;
/** A web chat as the page and its events name it: `ID`, main's conversation `web:ID`, or `AGENT/ID`, that agent's. */
const WEB_CHAT = /^(?:[a-z0-9][a-z0-9_-]{0,31}\/)?[A-Za-z0-9_-]{1,64}$/;
const JOB_ACTIONS = ["run", "pause", "resume", "delete", "edit"] as const;
const ALL_CHANNELS: ChannelName[] = ["telegram", "discord", "console", "web", "system"];

/** The header the page sends its session in, never a cookie: browsers send a host's cookies to every port of it, so a
 * page served by another local user would collect them. A foreign origin cannot add this header either (that needs
 * CORS, which pincer never grants), so nothing a foreign page makes the browser send is authorised (no CSRF). */
const SESSION_HEADER = "x-pincer-session";

/** Starts the control page on PINCER_WEB_ADDR (node:http, no framework): `/healthz` and `/metrics` for machines,
 * everything else only with the token. Routes are exact paths, and the one file read (a spoken reply's) is the one the
 * web chat named under an id: no path comes from a request. Off, or an address that cannot be used, gives undefined
 * (one log line) and never stops the daemon. */
export async function startControlPage(deps: {
  app: App;
  /** The channels the daemon runs (the web chat among them when on). */
  channels: () => Channel[];
  web?: WebChatPort;
  log: Logger;
}) {
  const { app, log } = deps;
  const { dashboard } = app.store;
  const wanted = app.config.webAddr;
  // Off: the gateway says so (it starts the page only when on).
  if (!wanted) return undefined;
  const token = loadWebToken(app.config.home, app.config.webToken);
  const dirs = skillDirs(app.config.workspace);
  const skills = () => listSkills(dirs).map(({ name, description, missing }) => ({ name, description, missing }));
  const startedAt = Date.now();
  const hub = new SseHub();
  const sessions = new WebSessions();
  // DNS rebinding: a site whose name resolves to 127.0.0.1 reaches a loopback listener with its own name as Host. A
  // loopback listener answers only to loopback names.
  const loopbackOnly = isLoopback(wanted.host);
  const state = () => collectState({ app, channels: deps.channels, skills, startedAt });
  // A change (a turn starting or ending, a web chat event) refreshes the open pages' sections soon after; a slow
  // timer catches what has no event (a pairing request, a channel's state).
  let pending: NodeJS.Timeout | undefined;
  const refresh = () => {
    if (pending || hub.clients.size === 0) return;
    pending = setTimeout(() => {
      pending = undefined;
      if (hub.clients.size === 0) return;
      state().then(
        (current) => hub.send("sections", renderSections(current, Date.now())),
        (err: unknown) => log.error({ err }, "control page: could not refresh"),
      );
    }, 150);
  };
  const timer = setInterval(refresh, 5_000).unref();
  const offActivity = ALL_CHANNELS.map((name) => app.bus.onActivity(name, refresh));
  const offChat = deps.web?.listen((event) => {
    hub.send("chat", event, event.chatId);
    refresh();
  });

  const server = createServer({ headersTimeout: 10_000, requestTimeout: 30_000 }, (req, res) => {
    handle(req, res).catch((err: unknown) => {
      const status = err instanceof HttpError ? err.status : 500;
      // The path without the query: the query may carry the token, which must never reach the log.
      if (status === 500) log.error({ err, path: (req.url ?? "/").split("?")[0] }, "control page request failed");
      if (res.headersSent) res.destroy();
      else sendJson(res, status, { error: err instanceof HttpError ? err.message : "internal error" });
      // A body we refused to read is not drained: close the connection instead.
      if (status === 413) res.on("finish", () => req.destroy());
    });
  });
  server.maxConnections = 128;
  const locked = (res: ServerResponse) => send(res, 401, "text/html; charset=utf-8", LOCKED_PAGE);

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { pathname: path, searchParams: query } = new URL(req.url ?? "/", "http://localhost");
    const method = req.method ?? "GET";
    const read = method === "GET" || method === "HEAD";
    if (loopbackOnly && !isLoopbackHost(req.headers.host)) throw new HttpError(421, "unknown host");

    const open = read ? OPEN_GETS[path] : undefined;
    if (open) return open(res, query);
    if (path === "/api/session" && method === "POST") {
      const presented = (await readJson(req)).token;
      if (typeof presented !== "string" || !secretsEqual(presented, token)) return locked(res);
      return sendJson(res, 200, { session: sessions.create() });
    }

    // The session comes in the header, or for the event stream (EventSource sends no headers) as `?session=`.
    const header = req.headers[SESSION_HEADER];
    const session =
      typeof header === "string" ? header : path === "/api/events" ? (query.get("session") ?? undefined) : undefined;
    if (session === undefined ? !bearerMatches(req, token) : !sessions.check(session)) return locked(res);

    if (read) {
      const get = GETS[path];
      if (!get) throw new HttpError(404, "not found");
      return get(res, query, session);
    }
    if (method !== "POST") throw new HttpError(405, "method not allowed");
    const body = await readJson(req);
    if (path === "/api/logout" && session !== undefined) {
      sessions.end(session);
      return sendJson(res, 200, { ok: true });
    }
    const act = POSTS[path.startsWith("/api/jobs/") ? "/api/jobs/" : path];
    if (!act) throw new HttpError(404, "not found");
    const status = (await act(textFields(body), path, body)) ?? 200;
    refresh();
    sendJson(res, status, { ok: true });
  }

  type Get = (res: ServerResponse, query: URLSearchParams, session?: string) => Promise<void> | void;
  /** What anyone may read: health and metrics for machines, and the page, which holds no data (see renderShell). */
  const OPEN_GETS: Record<string, Get> = {
    "/healthz": async (res) => {
      const health = healthOf({
        database: await dashboard.ping(),
        channels: await channelStates(app, deps.channels()),
      });
      sendJson(res, health.status === "ok" ? 200 : 503, health);
    },
    "/metrics": async (res) => {
      if (!app.metrics) throw new HttpError(404, "not found");
      send(res, 200, app.metrics.registry.contentType, await app.metrics.registry.metrics());
    },
    "/": shell,
  };

  /** What the page reads with its session (or the token as a bearer). */
  const GETS: Record<string, Get> = {
    "/api/page": async (res, query) => sendJson(res, 200, await page(query)),
    "/api/state": async (res) => sendJson(res, 200, await state()),
    "/api/history": async (res, query) => {
      const key = query.get("key") ?? "";
      sendJson(res, 200, { sessionKey: key, entries: await dashboard.history(key.slice(0, 300)) });
    },
    "/api/voice": async (res, query) => {
      const file = deps.web?.voiceNote(query.get("chat") ?? "", query.get("id") ?? "");
      send(res, 200, "audio/ogg", found(file && (await readFile(file).catch(() => undefined)), "no such spoken reply"));
    },
    "/api/events": (res, query, session) => {
      const chat = query.get("chat") ?? "";
      if (!hub.add(res, WEB_CHAT.test(chat) ? chat : undefined)) throw new HttpError(503, "too many open pages");
      // Logging out closes the session's streams; a stream that closes first forgets its session.
      const forget = session === undefined ? undefined : sessions.onEnd(session, () => res.destroy());
      if (forget) res.on("close", forget);
    },
  };

  /** What the page may change, by path; each answers `{ ok: true }` with the status it returns (200 when none). */
  const POSTS: Record<
    string,
    (text: TextField, path: string, body: Record<string, unknown>) => Promise<number | undefined> | Promise<void>
  > = {
    "/api/chat": async (text) => {
      if (!deps.web) throw new HttpError(503, "the web chat is not running");
      const chatId = text("chatId", 97);
      const bad = !WEB_CHAT.test(chatId) || !isAgent(agentOf(chatId));
      if (bad) throw new HttpError(400, '"chatId" must be ID or AGENT/ID (A-Z, a-z, 0-9, _, -; a configured agent)');
      await deps.web.send(chatId, text("text", 16_000));
      return 202;
    },
    // `{ id }`; edit also `message`, `schedule`, `tz` and the stop rules of LIMIT_FIELDS (an empty one unsets it).
    "/api/jobs/": async (text, path, body) => {
      const action = JOB_ACTIONS.find((name) => path === `/api/jobs/${name}`);
      if (!action) throw new HttpError(404, "not found");
      const id = text("id", 64);
      const result =
        action === "edit"
          ? await app.jobs.edit(id, {
              message: text("message", 4000),
              schedule: text("schedule", 200),
              tz: text("tz", 64),
              limits: Object.fromEntries(
                LIMIT_FIELDS.filter((f) => body[f] !== undefined).map((f) => [f, text(f, 40, 0)]),
              ),
            })
          : await app.jobs[action === "delete" ? "remove" : action](id);
      if (!result.ok) throw new HttpError(result.status, result.text);
      log.info({ action, jobId: id }, result.text);
    },
    "/api/pairing/approve": async (text) => {
      // As `pincer pairing approve`: the user's jobs paused by an earlier revoke run again.
      const channel = pairedChannel(text);
      const approved = found(
        await app.store.pairing.approve(channel, text("code", 16)),
        "no such pairing code (expired?)",
      );
      log.info({ channel, userId: approved.user.userId }, "pairing approved from the control page");
    },
    "/api/pairing/deny": async (text) =>
      void found(await app.store.pairing.deny(pairedChannel(text), text("userId", 64)), "no such pairing request"),
    // As `pincer people role ID ROLE` and `pincer people remove ID`, on the running app's store.
    "/api/people/role": async (text) =>
      answered(await peopleRole(app.config, text("id", 300), text("role", 40), app.store)),
    "/api/people/remove": async (text) => answered(await peopleRemove(app.config, text("id", 300), app.store)),
    "/api/approvals/decide": async (text) => {
      const approvals = approvalsOn();
      const choice = text("choice", 6);
      if (choice !== "once" && choice !== "always" && choice !== "deny") {
        throw new HttpError(400, '"choice" must be once, always or deny');
      }
      const decided = await approvals.decide(text("id", 40), choice, "the control page");
      if (!decided.taken) throw new HttpError(409, decided.text);
    },
    "/api/approvals/revoke": async (text) => {
      approvalsOn();
      found(await app.store.approvals.revoke(text("sessionKey", 300), text("entry", 1000)), "no such entry");
    },
  };

  function answered({ ok, text }: { ok: boolean; text: string }) {
    if (!ok) throw new HttpError(/^No person/.test(text) ? 404 : 400, text);
    log.info({ text }, "people changed from the control page");
  }

  function found<T>(value: T | undefined | null | false | "", missing: string): T {
    if (!value) throw new HttpError(404, missing);
    return value;
  }

  function pairedChannel(text: TextField) {
    const channel = text("channel", 16);
    if (!isPairedChannel(channel)) throw new HttpError(400, '"channel" must be telegram or discord');
    return channel;
  }

  function approvalsOn() {
    if (!app.approvals) throw new HttpError(404, "approvals are off (config approvals)");
    return app.approvals;
  }

  const isAgent = (name: string) => Object.hasOwn(app.config.agents, name);

  /** The page's content for `?chat=`, `?agent=` (whose web chat it is) and `?c=` (a conversation's history). */
  async function page(query: URLSearchParams): Promise<{ model: string; chatId: string; main: string }> {
    const chat = query.get("chat") ?? "main";
    const agent = query.get("agent") ?? MAIN_AGENT;
    const id = CHAT_ID.test(chat) ? chat : "main";
    const conversation = agentSessionKey(isAgent(agent) ? agent : MAIN_AGENT, sessionKeyOf("web", id));
    const key = query.get("c");
    const main = renderMain({
      state: await state(),
      now: Date.now(),
      conversation,
      chatLog: renderChatLog(await dashboard.history(conversation, 100)),
      history: key ? renderHistory(key, await dashboard.history(key.slice(0, 300)), app.config.timezone) : undefined,
    });
    const { model } = app.config.agents[agentOf(conversation)].openai;
    return { model, chatId: agentSessionKey(agentOf(conversation), id), main };
  }

  function shell(res: ServerResponse): void {
    const nonce = randomBytes(16).toString("base64");
    const csp = `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; img-src 'self' data:; media-src blob:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'`;
    send(res, 200, "text/html; charset=utf-8", renderShell(nonce), { "content-security-policy": csp });
  }

  const close = async () => {
    clearInterval(timer);
    clearTimeout(pending);
    for (const off of offActivity) off();
    offChat?.();
    sessions.endAll();
    hub.close();
    if (!server.listening) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  server.listen(wanted.port, wanted.host);
  try {
    await once(server, "listening"); // rejects on the server's "error"
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const reason = code === "EADDRINUSE" ? "the address is in use" : (err as Error).message;
    log.warn({ addr: `${wanted.host}:${wanted.port}` }, `control page not started: ${reason} (set PINCER_WEB_ADDR)`);
    await close();
    return undefined;
  }
  const addr: WebAddr = { host: wanted.host, port: (server.address() as AddressInfo).port };
  log.info({ url: pageUrl(addr) }, "control page is up; `pincer dashboard` prints its address with the token");
  return { addr, close };
}
