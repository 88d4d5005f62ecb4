/**
 * MCP through the agent loop: the real SDK client in pincer against the reference server from the
 * npm registry (`@modelcontextprotocol/server-everything`) over stdio and streamable HTTP (and its
 * SSE mode for the fallback), the real OpenAI client against the scripted model.
 */
import type { ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { App } from "../src/app.js";
import type { InboundMessage, SystemRun } from "../src/bus/types.js";
import { HEARTBEAT_OK, HEARTBEAT_SESSION } from "../src/scheduler/heartbeat.js";
import { runMessage } from "../src/scheduler/run-message.js";
import type { CronJob } from "../src/store/store.js";
import { type FakeOpenAI, startFakeOpenAI } from "./fakes/openai-server.js";
import { recordingChannel, tempHome, testApp, userMessage } from "./helpers/app.js";
import { EVERYTHING, FAST_MCP, HOSTILE, startEverythingHttp, stopChild, writeMcpConfig } from "./helpers/mcp.js";
import { message, privateChat, startTelegramHarness, user } from "./helpers/telegram.js";
import { until } from "./helpers/until.js";

const SECRET = "sk-pincer-secret-do-not-leak-14";
let model: FakeOpenAI;
const children: ChildProcess[] = [];

beforeAll(async () => {
  model = await startFakeOpenAI();
});
afterAll(async () => {
  for (const child of children) await stopChild(child);
  await model.close();
});

interface Harness {
  app: App;
  home: string;
  channel: ReturnType<typeof recordingChannel>;
  chat: string;
  seen: number;
}

async function start(servers: Record<string, unknown>, env: Record<string, string> = {}): Promise<Harness> {
  const home = tempHome("pincer-mcp-");
  writeMcpConfig(home, servers);
  const app = await testApp(model.url, home, env, undefined, undefined, {
    mcpTiming: FAST_MCP,
    mcpStatusFile: join(home, "mcp-status.json"),
  });
  const channel = recordingChannel(app);
  await app.start([channel]);
  return { app, home, channel, chat: `mcp${Math.random().toString(36).slice(2, 8)}`, seen: 0 };
}

function connected(h: Harness): boolean {
  const status = h.app.mcp.status();
  return status.length > 0 && status.every((s) => s.state === "connected");
}

/** One turn in which the model makes these calls; answers the tool results it got back, in order. */
async function turn(h: Harness, calls: Array<{ name: string; arguments: unknown }>): Promise<string[]> {
  const before = model.requests.length;
  model.enqueue({ toolCalls: calls }, { content: "done" });
  await h.app.bus.publishInbound(userMessage(h.chat, "go"));
  await h.channel.waitFor(++h.seen);
  const tools = model.requests[before + 1].messages.filter((m) => m.role === "tool");
  return tools.slice(-calls.length).map((m) => String(m.content));
}

function offered(requestIndex: number): string[] {
  return (model.requests[requestIndex].tools ?? []).map((t) => t.function.name);
}

describe("MCP over stdio with server-everything", () => {
  let h: Harness;
  beforeAll(async () => {
    process.env.OPENAI_API_KEY = SECRET;
    h = await start(
      {
        "every.thing": {
          command: process.execPath,
          args: [EVERYTHING, "stdio"],
          // biome-ignore lint/suspicious/noTemplateCurlyInString: the config file's ${VAR} syntax, literally.
          env: { GREETING: "${MCP_TEST_GREETING}" },
          toolTimeoutSeconds: 1,
        },
      },
      { OPENAI_API_KEY: SECRET, MCP_TEST_GREETING: "hello from .env" },
    );
    await until(() => connected(h), "server-everything to connect");
  });
  afterAll(async () => {
    delete process.env.OPENAI_API_KEY;
    await h.app.stop();
  });

  it("offers its tools as mcp_<server>_<tool> and runs calls through the loop", async () => {
    const before = model.requests.length;
    const results = await turn(h, [
      { name: "mcp_every_thing_echo", arguments: { message: "hi there" } },
      { name: "mcp_every_thing_get-sum", arguments: { a: 2, b: 40 } },
      { name: "mcp_every_thing_get-structured-content", arguments: { location: "Chicago" } },
      { name: "mcp_every_thing_get-tiny-image", arguments: {} },
      { name: "mcp_every_thing_get-resource-links", arguments: { count: 1 } },
    ]);
    expect(offered(before)).toEqual(
      expect.arrayContaining(["exec", "mcp_every_thing_echo", "mcp_every_thing_get-sum", "mcp_every_thing_get-env"]),
    );
    expect(results[0]).toBe("Echo: hi there");
    expect(results[1]).toContain("42");
    expect(JSON.parse(results[2])).toMatchObject({ temperature: expect.any(Number) });
    const saved = /saved to (mcp-files\/every_thing\/[^,]+\.png)/.exec(results[3])?.[1];
    expect(saved, results[3]).toBeDefined();
    const png = readFileSync(join(h.app.config.workspace, saved as string));
    expect(png.subarray(1, 4).toString()).toBe("PNG");
    expect(results[4]).toMatch(/\[resource link: .* demo:\/\/resource\//);
    // readOnlyHint decides batching: echo may share a batch, toggling logging runs alone.
    expect(h.app.registry.isReadOnly("mcp_every_thing_echo")).toBe(true);
    expect(h.app.registry.isReadOnly("mcp_every_thing_toggle-simulated-logging")).toBe(false);
  });

  it("starts the server with its own environment: listed variables, never pincer's secrets", async () => {
    const [env] = await turn(h, [{ name: "mcp_every_thing_get-env", arguments: {} }]);
    expect(JSON.parse(env)).toMatchObject({ GREETING: "hello from .env" });
    expect(env).not.toContain(SECRET);
    expect(env).not.toContain("OPENAI_API_KEY");
  });

  it("returns bad arguments, isError results and timeouts as Error: … and the turn goes on", async () => {
    const results = await turn(h, [
      { name: "mcp_every_thing_get-sum", arguments: { a: "two", b: 1 } },
      { name: "mcp_every_thing_get-sum", arguments: "{not json" },
      { name: "mcp_every_thing_get-resource-reference", arguments: { resourceId: 0 } },
      { name: "mcp_every_thing_trigger-long-running-operation", arguments: { duration: 5, steps: 5 } },
      { name: "mcp_every_thing_echo", arguments: { message: "still here" } },
    ]);
    expect(results[0]).toMatch(/^Error: invalid arguments for mcp_every_thing_get-sum: a must be number/);
    expect(results[1]).toMatch(/^Error: the arguments for mcp_every_thing_get-sum are not valid JSON/);
    expect(results[2]).toMatch(/^Error: Invalid resourceId: 0/);
    expect(results[3]).toMatch(/^Error: .*(timed out after 1 s|did not answer within 1 s)/);
    expect(results[4]).toBe("Echo: still here");
    expect(h.channel.sent.at(-1)?.text).toBe("done");
  });

  it("answers 'unavailable' while a killed server is down, then restarts it", async () => {
    const pid = h.app.mcp.status()[0].pid as number;
    process.kill(-pid, "SIGKILL");
    await until(() => h.app.mcp.status()[0].state !== "connected", "the death to be noticed");
    const [down] = await turn(h, [{ name: "mcp_every_thing_echo", arguments: { message: "anyone?" } }]);
    expect(down).toMatch(/^Error: server every\.thing is unavailable/);
    await until(() => connected(h), "the server to be restarted");
    expect(h.app.mcp.status()[0].pid).not.toBe(pid);
    const [up] = await turn(h, [{ name: "mcp_every_thing_echo", arguments: { message: "back" } }]);
    expect(up).toBe("Echo: back");
  });

  it("lists the servers in /status", async () => {
    await h.app.bus.publishInbound(userMessage(h.chat, "/status"));
    await h.channel.waitFor(++h.seen);
    expect(h.channel.sent.at(-1)?.text).toMatch(/MCP servers:\n {2}every\.thing \(stdio\): connected, \d+ tools/);
  });

  it("keeps untrusted servers' tools from runs nobody watches: reminders, the heartbeat, a helper's relayed result", async () => {
    const job = {
      id: "j1",
      name: "",
      message: "check the thing",
      schedule: { kind: "at", at: Date.now() },
      tz: "UTC",
      origin: { channel: "console", chatId: h.chat, sessionKey: `console:${h.chat}`, isGroup: false },
    } as unknown as CronJob;
    const system = (id: string, sessionKey: string, run: SystemRun): InboundMessage => ({
      ...userMessage(h.chat, "a run nobody watches"),
      id,
      channel: "system",
      senderId: run.kind,
      sessionKey,
      run,
    });
    const runs = [
      runMessage(job, Date.now(), Date.now()),
      system(`heartbeat:${Date.now()}`, HEARTBEAT_SESSION, {
        kind: "heartbeat",
        deliverTo: `console:${h.chat}`,
        silentReply: HEARTBEAT_OK,
      }),
      system("helper:h9", `console:${h.chat}`, { kind: "helper", runId: "h9", status: "done" }),
    ];
    for (const run of runs) {
      const before = model.requests.length;
      model.enqueue(
        { toolCalls: [{ name: "mcp_every_thing_echo", arguments: { message: "unwatched" } }] },
        { content: "ok" },
      );
      await h.app.bus.publishInbound(run);
      await until(() => model.requests.length >= before + 2, `the ${run.senderId} run's two model calls`);
      expect(
        offered(before).filter((name) => name.startsWith("mcp_")),
        run.senderId,
      ).toEqual([]);
      expect(offered(before)).toContain("exec");
      const result = model.requests[before + 1].messages.filter((m) => m.role === "tool").at(-1);
      expect(String(result?.content)).toMatch(
        /^Error: mcp_every_thing_echo belongs to an MCP server not marked "trusted"/,
      );
    }
    h.seen = h.channel.sent.length;
  });

  it("kills the server when pincer stops", async () => {
    const pid = h.app.mcp.status()[0].pid as number;
    await h.app.stop();
    expect(() => process.kill(pid, 0)).toThrow();
    expect(JSON.parse(readFileSync(join(h.home, "mcp-status.json"), "utf8")).servers[0].state).toBe("stopped");
    h = await start({});
  });
});

describe("MCP over HTTP with server-everything", () => {
  it("calls tools over streamable HTTP on 127.0.0.1", async () => {
    const { port, child } = await startEverythingHttp("streamableHttp");
    children.push(child);
    const h = await start({ web: { url: `http://127.0.0.1:${port}/mcp`, headers: { "X-Test": "1" } } });
    try {
      await until(() => connected(h), "the HTTP server to connect");
      const results = await turn(h, [
        { name: "mcp_web_echo", arguments: { message: "over http" } },
        { name: "mcp_web_get-sum", arguments: { a: 1, b: 1 } },
      ]);
      expect(results).toEqual(["Echo: over http", "The sum of 1 and 1 is 2."]);
      // The server goes away: calls answer with an error, and pincer reconnects once it is back.
      await stopChild(child);
      const [down] = await turn(h, [{ name: "mcp_web_echo", arguments: { message: "gone?" } }]);
      expect(down).toMatch(/^Error: server web is unavailable/);
      const again = await startEverythingHttp("streamableHttp", port);
      children.push(again.child);
      await until(() => connected(h), "the HTTP server to be reconnected");
      const [back] = await turn(h, [{ name: "mcp_web_echo", arguments: { message: "back" } }]);
      expect(back).toBe("Echo: back");
    } finally {
      await h.app.stop();
    }
  });

  it("falls back to SSE for a server that only speaks SSE", async () => {
    const { port, child } = await startEverythingHttp("sse");
    children.push(child);
    const h = await start({ old: { url: `http://127.0.0.1:${port}/sse` } });
    try {
      await until(() => connected(h), "the SSE server to connect");
      const [echo] = await turn(h, [{ name: "mcp_old_echo", arguments: { message: "via sse" } }]);
      expect(echo).toBe("Echo: via sse");
    } finally {
      await h.app.stop();
    }
  });
});

describe("servers that never start", () => {
  it("hold up the first turn only until their connect timeout: the chat is answered, without their tools", async () => {
    const h = await startTelegramHarness({
      app: { mcpTiming: { ...FAST_MCP, connectTimeoutMs: 1000 } },
      adjust: (config) => {
        config.mcp.servers = {
          ghost: {
            command: "/nonexistent/mcp-server",
            args: [],
            env: {},
            headers: {},
            toolTimeoutSeconds: 5,
            trusted: false,
          },
          mute: {
            command: process.execPath,
            args: [HOSTILE, "no-init"],
            env: {},
            headers: {},
            toolTimeoutSeconds: 5,
            trusted: false,
          },
        };
      },
    });
    try {
      h.model.enqueue({ content: "Hello, Ann" });
      h.telegram.pushUpdate(message(privateChat(42), user(42, "Ann"), { text: "hi bot" }));
      const sent = await h.telegram.waitFor(() => h.telegram.sent[0]);
      expect(sent.text).toBe("Hello, Ann");
      const status = Object.fromEntries(h.app.mcp.status().map((s) => [s.name, s]));
      expect(status.ghost.state).not.toBe("connected");
      // Its first attempt timed out (1 s here); it keeps trying in the background.
      expect(status.mute.state).not.toBe("connected");
      await until(() => h.app.mcp.status().find((s) => s.name === "ghost")?.error, "the ghost's error");
      expect(h.app.mcp.status().find((s) => s.name === "ghost")?.error).toMatch(/ENOENT/);
      expect((h.model.requests[0].tools ?? []).some((t) => t.function.name.startsWith("mcp_"))).toBe(false);
      const mutePid = status.mute.pid as number;
      await h.close();
      expect(existsSync(`/proc/${mutePid}`)).toBe(false);
    } finally {
      await h.close().catch(() => {});
    }
  });
});
