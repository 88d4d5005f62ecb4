import { mkdirSync, statSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { App } from "../src/app.js";
import { startControlPage } from "../src/web/control-page.js";
import { webTokenPath } from "../src/web/token.js";
import { type FakeOpenAI, startFakeOpenAI } from "./fakes/openai-server.js";
import { tempHome, testApp } from "./helpers/app.js";
import { until } from "./helpers/until.js";
import { login, startWebHarness, type WebHarness } from "./helpers/web.js";

/** The control page over plain HTTP: auth, CSRF, limits, escaping, health and metrics after a turn. */

let model: FakeOpenAI;
let app: App;
let h: WebHarness;
let auth: { "x-pincer-session": string };

beforeAll(async () => {
  model = await startFakeOpenAI();
  app = await testApp(model.url, tempHome("pincer-web-"), { PINCER_WEB_ADDR: "127.0.0.1:0" });
  await app.start([]);
  h = await startWebHarness(app);
  auth = await login(h.base, h.token);
});
afterAll(async () => {
  await h.close();
  await app.stop();
  await model.close();
});

const get = (path: string, headers: Record<string, string> = {}) => fetch(`${h.base}${path}`, { headers });
const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${h.base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });

describe("auth", () => {
  it("keeps a generated token in PINCER_HOME, readable by the owner only", async () => {
    expect(h.token.length).toBeGreaterThanOrEqual(32);
    expect(statSync(webTokenPath(app.config.home)).mode & 0o777).toBe(0o600);
  });

  it("serves no data without a session, and a wrong token or session exactly like none", async () => {
    const none = await get("/api/state");
    const wrongToken = await post("/api/session", { token: "wrong-token-wrong-token" });
    // One character off (never the same character: that would be the real token).
    const almost = await post("/api/session", { token: `${h.token.slice(0, -1)}${h.token.endsWith("x") ? "y" : "x"}` });
    const wrongSession = await get("/api/state", { "x-pincer-session": "forged" });
    const wrongBearer = await get("/api/state", { authorization: "Bearer nope" });
    const responses = [none, wrongToken, almost, wrongSession, wrongBearer];
    const bodies = await Promise.all(responses.map((r) => r.text()));
    for (const res of responses) {
      expect(res.status).toBe(401);
      expect(res.headers.get("set-cookie")).toBeNull();
    }
    expect(new Set(bodies).size).toBe(1);
    expect(bodies[0]).not.toContain(h.token);
    for (const path of ["/api/page", "/api/state", "/api/events", "/api/history?key=web:main"]) {
      expect((await get(path)).status).toBe(401);
    }
    expect((await post("/api/chat", { chatId: "main", text: "hi" }, { origin: h.base })).status).toBe(401);
    // The page itself is the same for everyone and holds nothing but the script that logs in.
    const shells = await Promise.all(["/", `/?token=${h.token}`, "/?c=web:main"].map((path) => get(path)));
    const html = await Promise.all(shells.map((r) => r.text()));
    for (const [i, res] of shells.entries()) {
      expect(res.status).toBe(200);
      expect(res.headers.get("set-cookie")).toBeNull();
      expect(html[i]).not.toContain(h.token);
      expect(html[i]).not.toContain("web:main");
      expect(html[i].replace(/nonce="[^"]*"/g, "")).toBe(html[0].replace(/nonce="[^"]*"/g, ""));
    }
  });

  it("trades the token for a per-login session sent in a header, never in a cookie", async () => {
    const res = await post("/api/session", { token: h.token });
    expect(res.status).toBe(200);
    expect(res.headers.get("set-cookie")).toBeNull();
    const { session } = (await res.json()) as { session: string };
    expect(session).not.toContain(h.token);
    expect(session).not.toBe(auth["x-pincer-session"]);
    const mine = { "x-pincer-session": session };
    expect((await get("/api/state", mine)).status).toBe(200);
    expect((await get("/api/state", { authorization: `Bearer ${h.token}` })).status).toBe(200);
    // The session in a cookie, or in a query other than the event stream's, authorises nothing.
    expect((await get("/api/state", { cookie: `pincer_session=${session}; x-pincer-session=${session}` })).status).toBe(
      401,
    );
    expect((await get(`/api/state?session=${session}`)).status).toBe(401);
    const shell = await get("/");
    expect(shell.headers.get("referrer-policy")).toBe("no-referrer");
    expect(shell.headers.get("content-security-policy")).toMatch(/script-src 'nonce-/);
    expect(await shell.text()).toContain("localStorage");

    // Logging out ends the session and its open event stream; other sessions go on.
    const events = await fetch(`${h.base}/api/events?chat=main&session=${session}`);
    expect(events.status).toBe(200);
    const ended = events.text();
    expect((await post("/api/logout", {}, mine)).status).toBe(200);
    await expect(ended).rejects.toThrow(/terminated/);
    expect((await get("/api/state", mine)).status).toBe(401);
    expect((await get("/api/state", auth)).status).toBe(200);

    // A restart ends every session: the new server knows none of them, only the token.
    const restarted = await startControlPage({ app, channels: () => [], log: pino({ level: "silent" }) });
    try {
      const base = `http://127.0.0.1:${restarted?.addr.port}`;
      expect((await fetch(`${base}/api/state`, { headers: auth })).status).toBe(401);
      expect((await fetch(`${base}/api/state`, { headers: await login(base, h.token) })).status).toBe(200);
    } finally {
      await restarted?.close();
    }
  });

  it("takes mutations only with the session header or the bearer token, which no other page can add (CSRF)", async () => {
    const body = { chatId: "csrf", text: "/help" };
    expect((await post("/api/chat", body, { origin: h.base, "sec-fetch-site": "same-origin" })).status).toBe(401);
    // An HTML form can only send simple content types; the API takes JSON only.
    expect((await post("/api/chat", "chatId=csrf&text=hi", { ...auth, "content-type": "text/plain" })).status).toBe(
      415,
    );
    expect((await post("/api/chat", body, auth)).status).toBe(202);
    expect((await post("/api/chat", body, { authorization: `Bearer ${h.token}` })).status).toBe(202);
    expect((await get("/api/chat", auth)).status).toBe(404);
  });
});

describe("hostile requests", () => {
  it("refuses huge bodies without reading them", async () => {
    const big = JSON.stringify({ chatId: "main", text: "x".repeat(100_000) });
    expect((await post("/api/chat", big, auth)).status).toBe(413);
    // Streamed without a length: cut off once past the limit.
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(`${h.base}/api/chat`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json", "transfer-encoding": "chunked" },
      });
      req.on("response", (res) => resolve(res.statusCode ?? 0));
      req.on("error", reject);
      const chunk = "x".repeat(16 * 1024);
      let sent = 0;
      const pump = () => {
        while (sent < 4 * 1024 * 1024) {
          sent += chunk.length;
          if (!req.write(chunk)) return req.once("drain", pump);
        }
        req.end();
      };
      pump();
    });
    expect(status).toBe(413);
    expect((await post("/api/chat", "{not json", auth)).status).toBe(400);
    for (const notAnObject of ["[1]", "null", '"text"', ""]) {
      const res = await post("/api/chat", notAnObject, auth);
      expect([res.status, await res.json()]).toEqual([400, { error: "the body must be a JSON object" }]);
    }
    expect((await post("/api/chat", { chatId: "../../etc", text: "hi" }, auth)).status).toBe(400);
    expect((await post("/api/chat", { chatId: "main", text: 42 }, auth)).status).toBe(400);
  });

  it("answers only to loopback names (DNS rebinding)", async () => {
    const raw = (host: string) =>
      new Promise<number>((resolve, reject) => {
        const req = request(`${h.base}/healthz`, { headers: { host } });
        req.on("response", (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on("error", reject);
        req.end();
      });
    expect(await raw("evil.example:7390")).toBe(421);
    expect(await raw("127.0.0.1.evil.example")).toBe(421);
    expect(await raw(`localhost:${new URL(h.base).port}`)).toBe(200);
    expect(await raw("[::1]:7390")).toBe(200);
  });

  it("has no path to traverse: routes are exact and nothing comes from disk", async () => {
    for (const path of [
      "/../../etc/passwd",
      "/%2e%2e/%2e%2e/etc/passwd",
      "/api/..%2f..%2fpackage.json",
      "/static/../app.ts",
    ]) {
      const res = await get(path, auth);
      expect(res.status).toBe(404);
      expect(await res.text()).not.toMatch(/root:|"name"/);
    }
    expect((await get("/healthz/../api/state")).status).toBe(401);
  });

  it("answers a change to no route, or to a route's first part, with 404", async () => {
    for (const path of ["/api/__proto__", "/api/pairing", "/api/approvals", "/api/jobs", "/api/chat/x"]) {
      expect((await post(path, { channel: "telegram" }, auth)).status, path).toBe(404);
    }
  });

  it("escapes what users, tools, skills and the model wrote", async () => {
    const evil = `<img src=x onerror="alert(1)"><script>alert(2)</script>`;
    const skill = join(app.config.workspace, "skills", "evil");
    mkdirSync(skill, { recursive: true });
    writeFileSync(
      join(skill, "SKILL.md"),
      `---\nname: <script>alert(4)</script>\ndescription: ${evil}\nrequires-bins: no-such-binary-here\n---\n`,
    );
    await app.store.conversations.append(`telegram:<b>1</b>`, [
      { role: "user", content: evil },
      { role: "assistant", content: `"'><svg onload=alert(3)>` },
    ]);
    await app.store.audit.record({
      sessionKey: "telegram:<b>1</b>",
      tool: "<i>exec</i>",
      arguments: `{"command":"${evil}"}`,
      result: evil,
      durationMs: 1,
    });
    const call = { kind: "<u>kind</u>", model: evil, completionTokens: 1, cachedTokens: 0, estimated: false };
    await app.store.usage.record({ ...call, sessionKey: "telegram:<b>1</b>", promptTokens: 1, at: Date.now() });
    const main = async (path: string) => ((await (await get(path, auth)).json()) as { main: string }).main;
    const page = await main("/api/page");
    const history = await main(`/api/page?c=${encodeURIComponent("telegram:<b>1</b>")}`);
    for (const html of [page, history]) {
      expect(html).not.toContain("<img src=x");
      expect(html).not.toContain("<script>alert");
      expect(html).not.toContain("<svg onload");
      expect(html).not.toContain("<b>1</b>");
    }
    expect(history).toContain("&lt;script&gt;alert(2)&lt;/script&gt;");
    expect(history).toContain("&lt;i&gt;exec&lt;/i&gt;");
    expect(page).toContain("&lt;script&gt;alert(4)&lt;/script&gt;");
    // The usage table names the chat escaped; the chart is the page's only SVG.
    expect(page).toContain("<td>telegram:&lt;b&gt;1&lt;/b&gt;</td>");
    expect(page.match(/<svg/g)).toHaveLength(1);
    expect(page).toContain("Left out of the prompt: program no-such-binary-here is not on PATH");
    // Only the page's own nonce'd script runs.
    expect(page).not.toContain("<script");
    expect((await (await get("/")).text()).match(/<script/g)).toHaveLength(1);
  });
});

describe("health and metrics", () => {
  it("/healthz and /metrics need no token", async () => {
    const health = await get("/healthz");
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: "ok", database: "ok", channels: { web: { state: "connected" } } });
    const metrics = await (await get("/metrics")).text();
    for (const name of [
      "pincer_turns_total",
      "pincer_turn_duration_seconds",
      "pincer_model_request_duration_seconds",
      "pincer_tool_calls_total",
      "pincer_queue_depth",
      "pincer_outbox_pending",
      "process_cpu_user_seconds_total",
      "nodejs_eventloop_lag_seconds",
    ]) {
      expect(metrics).toContain(`# TYPE ${name}`);
    }
  });

  it("answers 503 naming the channel that is down", async () => {
    h.channels.push({
      name: "discord",
      start: async () => {},
      stop: async () => {},
      status: () => ({ state: "down", detail: "gateway closed" }),
    });
    try {
      const res = await get("/healthz");
      expect(res.status).toBe(503);
      expect(await res.json()).toMatchObject({
        status: "degraded",
        channels: { discord: { state: "down", detail: "gateway closed" }, web: { state: "connected" } },
      });
    } finally {
      h.channels.pop();
    }
  });

  it("counts a web chat turn, its model calls and tool calls", async () => {
    const metric = async (line: RegExp) => Number((await (await get("/metrics")).text()).match(line)?.[1] ?? 0);
    const turnsBefore = await metric(/^pincer_turns_total\{outcome="ok"\} (\d+)/m);
    model.enqueue(
      {
        toolCalls: [
          { name: "cron", arguments: { action: "list" } },
          { name: "no_such_tool", arguments: {} },
        ],
      },
      { content: "No reminders yet." },
    );
    const events: string[] = [];
    const off = h.web.listen((e) => {
      if (e.type === "message") events.push(e.text);
    });
    expect((await post("/api/chat", { chatId: "metrics", text: "what is scheduled?" }, auth)).status).toBe(202);
    await until(() => events.includes("No reminders yet."), "the reply");
    off();
    await until(
      async () => (await metric(/^pincer_turns_total\{outcome="ok"\} (\d+)/m)) === turnsBefore + 1,
      "the turn to be counted",
    );
    const text = await (await get("/metrics")).text();
    expect(text).toMatch(/^pincer_tool_calls_total\{tool="cron",outcome="ok"\} 1$/m);
    expect(text).toMatch(/^pincer_tool_calls_total\{tool="unknown",outcome="error"\} 1$/m);
    expect(text).toMatch(/^pincer_model_request_duration_seconds_count\{outcome="ok"\} [2-9]/m);
    expect(text).toMatch(/^pincer_turn_duration_seconds_count [1-9]/m);
    const state = (await (await get("/api/state", auth)).json()) as {
      conversations: Array<{ sessionKey: string }>;
    };
    expect(state.conversations.map((c) => c.sessionKey)).toContain("web:metrics");
  });
});

describe("running work", () => {
  it("shows background helpers while they run", async () => {
    model.enqueue({ content: "helper result", delayMs: 1500 });
    const id = await app.helpers.spawn(
      {
        id: "h1",
        channel: "web",
        chatId: "main",
        senderId: "owner",
        senderName: "owner",
        text: "research",
        media: [],
        isGroup: false,
        mentionsBot: true,
        receivedAt: Date.now(),
        sessionKey: "web:main",
      },
      "look something up",
      "<u>research</u>",
    );
    const state = (await (await get("/api/state", auth)).json()) as { helpers: Array<{ id: string }> };
    expect(state.helpers.map((x) => x.id)).toEqual([id]);
    const { main } = (await (await get("/api/page", auth)).json()) as { main: string };
    expect(main).toContain("&lt;u&gt;research&lt;/u&gt; (web:main");
    await until(async () => app.helpers.list().length === 0, "the helper to finish");
  });
});
