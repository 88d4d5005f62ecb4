/**
 * Attacks on pincer's MCP client with a misbehaving server built on the official SDK
 * (test/fakes/hostile-mcp-server.mjs): floods, huge results, silence, crash loops, too many
 * tools, names that collide. Calls go through the registry exactly as the agent loop makes them.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Writable } from "node:stream";
import { type Logger, pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import type { McpServerFileSettings } from "../src/config/file-schema.js";
import { packageRoot } from "../src/paths.js";
import { McpManager } from "../src/tools/mcp/manager.js";
import { ToolRegistry } from "../src/tools/registry.js";
import type { ToolContext } from "../src/tools/tool.js";
import { tempHome, userMessage } from "./helpers/app.js";
import { testBus } from "./helpers/bus.js";
import { alive, FAST_MCP, HOSTILE } from "./helpers/mcp.js";
import { until } from "./helpers/until.js";

const log = pino({ level: "silent" });
let managers: McpManager[] = [];

afterEach(async () => {
  await Promise.all(managers.map((m) => m.close()));
  managers = [];
});

function hostile(...args: string[]): McpServerFileSettings {
  return {
    command: process.execPath,
    args: [HOSTILE, ...args],
    env: {},
    headers: {},
    toolTimeoutSeconds: 2,
    trusted: false,
  };
}

function setup(servers: Record<string, McpServerFileSettings>, timing = FAST_MCP, logger: Logger = log) {
  const registry = new ToolRegistry();
  const manager = new McpManager({ servers, registry, log: logger, maxResultChars: 10_000, timing });
  managers.push(manager);
  manager.start();
  const workspace = tempHome("pincer-mcp-attack-");
  const ctx: ToolContext = {
    sessionKey: "console:attack",
    inbound: userMessage("attack", "go"),
    workspace,
    seesOwnerMemory: true,
    signal: new AbortController().signal,
    bus: testBus(),
    log,
  };
  const state = (name: string) => manager.status().find((s) => s.name === name);
  return { registry, manager, ctx, state };
}

describe("hostile MCP servers", () => {
  it("a server offering 500 tools gets 64 offered and a warning naming enabledTools", async () => {
    const { registry, state } = setup({ many: hostile("tools=500") });
    await until(() => state("many")?.state === "connected", "connect");
    expect(registry.names.filter((n) => n.startsWith("mcp_many_"))).toHaveLength(64);
    expect(state("many")?.warnings.join(" ")).toMatch(/offers 507 tools; only the first 64 .*enabledTools/);
    const narrowed = setup({ few: { ...hostile("tools=500"), enabledTools: ["t499", "mcp_few_t7", "nope"] } });
    await until(() => narrowed.state("few")?.state === "connected", "connect");
    expect(narrowed.registry.names.sort()).toEqual(["mcp_few_t499", "mcp_few_t7"]);
    expect(narrowed.state("few")?.warnings).toEqual(['enabledTools lists "nope", which the server does not offer']);
  });

  it("names with odd characters are sanitised; names that collide after sanitising or cutting keep the first", async () => {
    const { registry, ctx, state } = setup({ "odd server!": hostile("odd-names") });
    await until(() => state("odd server!")?.state === "connected", "connect");
    const names = registry.names;
    expect(names).toContain("mcp_odd_server__weird_tool___x");
    const long = names.filter((n) => n.startsWith("mcp_odd_server__long_"));
    expect(long).toHaveLength(1);
    expect(long[0]).toHaveLength(64);
    expect(names.every((n) => /^[A-Za-z0-9_-]{1,64}$/.test(n))).toBe(true);
    const warnings = state("odd server!")?.warnings.join("\n");
    expect(warnings).toContain(
      'tools "weird tool/ä.x" and "weird_tool__.x" both become mcp_odd_server__weird_tool___x',
    );
    expect(await registry.execute("mcp_odd_server__weird_tool___x", "{}", ctx)).toBe("weird tool/ä.x ran");
  });

  it("a storm of 1000 list_changed notifications costs a couple of list reads, not 1000", async () => {
    const { registry, ctx, state } = setup({ storm: hostile() });
    await until(() => state("storm")?.state === "connected", "connect");
    const before = Number(await registry.execute("mcp_storm_list_count", "{}", ctx));
    expect(await registry.execute("mcp_storm_storm", "{}", ctx)).toBe("sent 1000 list_changed");
    // The notifications and the first read they cause reach the server before this call does.
    const reads = Number(await registry.execute("mcp_storm_list_count", "{}", ctx)) - before;
    expect(reads).toBeGreaterThanOrEqual(1);
    expect(reads).toBeLessThanOrEqual(3);
  });

  it("a huge description is cut, a huge or broken schema leaves that tool out with a warning", async () => {
    const { registry, ctx, state } = setup({ fat: hostile("bloated") });
    await until(() => state("fat")?.state === "connected", "connect");
    expect(registry.get("mcp_fat_verbose")?.description.length).toBeLessThan(1100);
    expect(registry.get("mcp_fat_bloated")).toBeUndefined();
    expect(registry.get("mcp_fat_broken")).toBeUndefined();
    const warnings = state("fat")?.warnings.join("\n");
    expect(warnings).toMatch(/tool "bloated" has an argument schema over 16000 characters; left out/);
    expect(warnings).toMatch(/tool "broken" has an argument schema pincer cannot use \(.*\); left out/);
    expect(await registry.execute("mcp_fat_huge", "{}", ctx)).toMatch(/^y+/);
  });

  it("a 5 MB result is cut to the result limit with a note", async () => {
    const { registry, ctx, state } = setup({ big: hostile() });
    await until(() => state("big")?.state === "connected", "connect");
    const result = await registry.execute("mcp_big_huge", "{}", ctx);
    expect(result.length).toBeLessThan(10_100);
    expect(result).toMatch(/^y{10000}\n… \(truncated, \d+ more chars\)$/);
  });

  it("20 MB on stdout without a newline drops the connection, the call fails, the server is restarted", async () => {
    const { registry, ctx, state } = setup({ flood: hostile() });
    await until(() => state("flood")?.state === "connected", "connect");
    const pid = state("flood")?.pid as number;
    const result = await registry.execute("mcp_flood_flood_stdout", "{}", ctx);
    expect(result).toMatch(
      /^Error: server flood is unavailable \(pincer closed it: the server sent a line over \d+ bytes\)/,
    );
    await until(() => state("flood")?.state === "connected" && state("flood")?.pid !== pid, "a new server process");
    expect(alive(pid)).toBe(false);
    expect(await registry.execute("mcp_flood_huge", "{}", ctx)).toMatch(/^y+/);
  });

  it("a server flooding stderr keeps working and pincer keeps only a small tail", async () => {
    const { registry, ctx, state } = setup({ noisy: hostile("flood-stderr", "crash-after=1500") });
    await until(() => state("noisy")?.state === "connected", "connect");
    expect(await registry.execute("mcp_noisy_t", "{}", ctx)).toMatch(/unknown tool/);
    expect(await registry.execute("mcp_noisy_add_tool", '{"name":"x"}', ctx)).toBe("added x");
    // When it dies, the reason shown is the end of its stderr, cut short.
    await until(() => state("noisy")?.error, "the crash to be noticed");
    expect((state("noisy")?.error ?? "").length).toBeLessThanOrEqual(330);
    expect(state("noisy")?.error).toMatch(/^the server exited: .*noise/);
  });

  it("a server that never answers initialize is given up on after the connect timeout and killed", async () => {
    const pidFile = join(tempHome("pincer-mcp-pid-"), "pids");
    const { state } = setup({ mute: hostile("no-init", `pid=${pidFile}`) }, { ...FAST_MCP, connectTimeoutMs: 500 });
    await until(() => existsSync(pidFile) && readFileSync(pidFile, "utf8").includes(" "), "the pid file");
    const [pid, grandchild] = readFileSync(pidFile, "utf8").trim().split(" ").map(Number);
    await until(() => state("mute")?.error, "the first attempt to fail");
    expect(state("mute")?.error).toMatch(/timed out/i);
    await until(() => !alive(pid) && !alive(grandchild), "the silent server and its child to be killed");
  });

  it("stopping while a server is still connecting ends it at once, not at the connect timeout", async () => {
    const pidFile = join(tempHome("pincer-mcp-pid-"), "pids");
    const { manager, state } = setup(
      { mute: hostile("no-init", `pid=${pidFile}`) },
      { ...FAST_MCP, connectTimeoutMs: 60_000 },
    );
    await until(() => existsSync(pidFile) && readFileSync(pidFile, "utf8").includes(" "), "the pid file");
    const [pid, grandchild] = readFileSync(pidFile, "utf8").trim().split(" ").map(Number);
    expect(state("mute")?.state).toBe("connecting");
    await manager.close();
    try {
      await until(() => !alive(pid) && !alive(grandchild), "the connecting server and its child to be gone", 10_000);
    } finally {
      for (const leftover of [pid, grandchild]) if (alive(leftover)) process.kill(leftover, "SIGKILL");
    }
  });

  it("a server crashing in a loop is restarted with growing delays, and says why it died", async () => {
    const countFile = join(tempHome("pincer-mcp-count-"), "starts");
    const delays: number[] = [];
    const recording = pino(
      { level: "warn" },
      new Writable({
        write(chunk, _encoding, done) {
          const line = JSON.parse(String(chunk)) as { server?: string; retryInMs?: number };
          if (line.server === "loop" && line.retryInMs !== undefined) delays.push(line.retryInMs);
          done();
        },
      }),
    );
    const { state } = setup(
      { loop: hostile("crash", `count=${countFile}`) },
      { connectTimeoutMs: 2000, retryInitialMs: 50, retryMaxMs: 400 },
      recording,
    );
    await until(() => delays.length >= 6, "six crashes");
    expect(state("loop")?.error).toBe("the server exited: hostile server: configuration missing, giving up");
    // Doubling from 50 ms up to the cap: never a tight loop, however fast the server dies.
    expect(delays.slice(0, 6)).toEqual([50, 100, 200, 400, 400, 400]);
    const starts = readFileSync(countFile, "utf8").trim().split("\n").map(Number);
    expect(starts.length).toBeGreaterThanOrEqual(6);
    expect(starts[5] - starts[0]).toBeGreaterThanOrEqual(50 + 100 + 200 + 400 + 400);
  });

  it("follows tools/list_changed: tools appear and disappear while pincer runs", async () => {
    const { registry, ctx, state } = setup({ live: hostile() });
    await until(() => state("live")?.state === "connected", "connect");
    expect(await registry.execute("mcp_live_add_tool", '{"name":"fresh.tool"}', ctx)).toBe("added fresh.tool");
    await until(() => registry.get("mcp_live_fresh_tool"), "the new tool");
    expect(await registry.execute("mcp_live_fresh_tool", "{}", ctx)).toBe("fresh.tool ran");
    await registry.execute("mcp_live_remove_tool", '{"name":"fresh.tool"}', ctx);
    await until(() => !registry.get("mcp_live_fresh_tool"), "the tool to go");
    expect(await registry.execute("mcp_live_fresh_tool", "{}", ctx)).toMatch(/^Error: unknown tool/);
  });

  it("a call that never returns times out; the server still answers the next one", async () => {
    const { registry, ctx, state } = setup({ slow: { ...hostile(), toolTimeoutSeconds: 1 } });
    await until(() => state("slow")?.state === "connected", "connect");
    expect(registry.isReadOnly("mcp_slow_hang")).toBe(true);
    expect(await registry.execute("mcp_slow_hang", "{}", ctx)).toMatch(/^Error: .*(timed out after 1 s|within 1 s)/);
    expect(await registry.execute("mcp_slow_add_tool", '{"name":"y"}', ctx)).toBe("added y");
  });

  it("a pincer that crashes takes its servers' process groups along (no orphans)", async () => {
    const dir = tempHome("pincer-mcp-crash-");
    const pidFile = join(dir, "pids");
    const script = join(dir, "crash.mts");
    writeFileSync(
      script,
      `import { McpManager } from ${JSON.stringify(join(packageRoot(), "src/tools/mcp/manager.ts"))};
import { ToolRegistry } from ${JSON.stringify(join(packageRoot(), "src/tools/registry.ts"))};
const noop = () => {};
const log = { info: noop, warn: noop, debug: noop, error: noop, child: () => log };
const manager = new McpManager({ servers: ${JSON.stringify({ kids: hostile(`pid=${pidFile}`) })}, registry: new ToolRegistry(), log, maxResultChars: 1000 });
manager.start();
const poll = setInterval(() => {
  if (manager.status()[0].state !== "connected") return;
  clearInterval(poll);
  setTimeout(() => { throw new Error("pincer crashed"); }, 10);
}, 20);
`,
    );
    const child = spawn(process.execPath, ["--import", "tsx", script], { cwd: packageRoot(), stdio: "ignore" });
    const [code] = (await once(child, "exit")) as [number];
    expect(code).toBe(1);
    const [pid, grandchild] = readFileSync(pidFile, "utf8").trim().split(" ").map(Number);
    try {
      await until(() => !alive(pid) && !alive(grandchild), "server and grandchild to be gone", 10_000);
    } finally {
      for (const leftover of [pid, grandchild]) if (alive(leftover)) process.kill(leftover, "SIGKILL");
    }
  });

  it("closing ends the server's whole process group", async () => {
    const pidFile = join(tempHome("pincer-mcp-pid-"), "pids");
    const { manager, state } = setup({ kids: hostile(`pid=${pidFile}`) });
    await until(() => state("kids")?.state === "connected", "connect");
    const [pid, grandchild] = readFileSync(pidFile, "utf8").trim().split(" ").map(Number);
    expect(alive(grandchild)).toBe(true);
    await manager.close();
    await until(() => !alive(pid) && !alive(grandchild), "server and grandchild to be gone", 10_000);
  });
});
