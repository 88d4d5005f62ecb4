/**
 * The per-command limits of the sandbox, through the whole daemon with the real bwrap: a fork bomb
 * the guard does not know, a file larger than the limit, memory past the limit, a nested user
 * namespace. The daemon keeps answering other chats throughout.
 */
import { existsSync, readdirSync, readFileSync, realpathSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type App, createApp } from "../src/app.js";
import { loadConfig } from "../src/config/config.js";
import { ownPidsCgroup } from "../src/tools/exec/cgroup.js";
import { checkSandbox, describeLimits } from "../src/tools/exec/sandbox-check.js";
import type { ChatRequest } from "./fakes/openai-server.js";
import { recordingChannel, tempHome, userMessage } from "./helpers/app.js";
import { chatOf, fakeModelForFile } from "./helpers/model.js";
import { hasSystemPackage } from "./helpers/system-packages.js";
import { until } from "./helpers/until.js";

const bwrap = hasSystemPackage("bwrap", "bubblewrap");

const fake = fakeModelForFile();
let home: string;
let app: App | undefined;

beforeEach(() => {
  home = realpathSync(tempHome("pincer-limits-"));
});
afterEach(async () => {
  await app?.stop();
  app = undefined;
  rmSync(home, { recursive: true, force: true });
});

function config() {
  const c = loadConfig({
    OPENAI_API_KEY: "test",
    OPENAI_BASE_URL: fake.url,
    PINCER_HOME: home,
    PINCER_SANDBOX: "bwrap",
    PINCER_TIMEZONE: "UTC",
    LOG_LEVEL: "silent",
  });
  c.agent.modelRetries = 0;
  c.exec.maxProcesses = 64;
  c.exec.maxFileSizeMB = 1;
  c.exec.maxMemoryMB = 256;
  return c;
}

function toolResults(request: ChatRequest): string[] {
  return request.messages.filter((m) => m.role === "tool").map((m) => String(m.content));
}

/** Replies with one exec per chat, then with the tool results. */
function scriptExec(commands: Record<string, { command: string; timeout?: number }>) {
  fake.respond((request) => {
    const chat = chatOf(request);
    if (request.messages.at(-1)?.role === "tool") return { content: toolResults(request).join(" | ") };
    return { toolCalls: [{ name: "exec", arguments: commands[chat] }] };
  });
}

const MARKER = `pincer-bomb-${process.pid}`;

function processesWith(marker: string): number {
  return readdirSync("/proc").filter((pid) => {
    try {
      return /^\d+$/.test(pid) && readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(marker);
    } catch {
      return false;
    }
  }).length;
}

describe.skipIf(!bwrap)("sandbox limits", () => {
  it("contains a fork bomb the guard does not list, and other chats are answered meanwhile", async () => {
    scriptExec({
      bomb: { command: `perl -e 'for (1..20) { fork } sleep 30' ${MARKER}`, timeout: 8 },
      other: { command: "echo still-answering" },
    });
    app = await createApp(config(), { log: pino({ level: "silent" }) });
    const channel = recordingChannel(app);
    await app.start([channel]);
    await app.bus.publishInbound(userMessage("bomb", "go"));
    // Sampled until the bomb has hit the limit (or for 10 s on a slow machine), and half a second after.
    let peak = 0;
    let full = Number.POSITIVE_INFINITY;
    const deadline = Date.now() + 10_000;
    while (Date.now() < Math.min(deadline, full + 500)) {
      peak = Math.max(peak, processesWith(MARKER));
      if (peak >= 32 && full === Number.POSITIVE_INFINITY) full = Date.now();
      await new Promise((r) => setTimeout(r, 50));
    }
    await app.bus.publishInbound(userMessage("other", "hello"));
    await channel.waitFor(2);
    // Answered while the bomb still ran (it is killed only at its 8 s timeout).
    expect(channel.sent.map((m) => `${m.chatId}: ${m.text}`)).toEqual([
      "other: still-answering",
      "bomb: Timed out after 8 s: the command and every process it started were killed.",
    ]);
    // 2^20 processes were asked for; the host saw at most the limit, and none is left.
    expect(peak).toBeLessThanOrEqual(64);
    expect(peak).toBeGreaterThanOrEqual(32);
    await until(() => processesWith(MARKER) === 0, "every process of the bomb gone", 5000);
    // Every command's cgroup (where the host offers one) is gone again.
    const cgroups = ownPidsCgroup(readFileSync("/proc/self/cgroup", "utf8"));
    if (cgroups && existsSync(cgroups)) {
      expect(readdirSync(cgroups).filter((name) => name.startsWith(`pincer-${process.pid}-`))).toEqual([]);
    }
  }, 30_000);

  it("stops files past the size limit, memory past the limit and nested user namespaces", async () => {
    scriptExec({
      fsize: { command: "head -c 2000000 /dev/zero > big.bin; echo exit=$?; wc -c < big.bin" },
      memory: {
        command: "python3 -c 'bytearray(400 * 1024 * 1024); print(\"allocated\")' 2>&1 | tail -1; echo done",
      },
      userns: { command: "unshare -r id; echo exit=$?" },
    });
    const c = config();
    app = await createApp(c, { log: pino({ level: "silent" }) });
    const channel = recordingChannel(app);
    await app.start([channel]);
    for (const chat of ["fsize", "memory", "userns"]) await app.bus.publishInbound(userMessage(chat, "go"));
    await channel.waitFor(3);
    const said = Object.fromEntries(channel.sent.map((m) => [m.chatId, m.text]));
    expect(said.fsize).toMatch(/exit=153\n1048576/);
    expect(statSync(join(c.workspace, "big.bin")).size).toBe(1024 * 1024);
    expect(said.memory).toMatch(/MemoryError\ndone/);
    expect(said.userns).toBe("exit=1\nSTDERR:\nunshare: unshare failed: No space left on device");
  }, 30_000);

  it("doctor names each limit that is active on this host", async () => {
    const c = config();
    const status = await checkSandbox(c);
    expect(status.features?.prlimit).toMatch(/\/prlimit$/);
    const limits = describeLimits(status, c.exec);
    expect(limits.detail).toContain("file size: at most 1 MB (RLIMIT_FSIZE)");
    expect(limits.detail).toContain("memory: at most 256 MB per process (RLIMIT_DATA)");
    expect(limits.detail).toMatch(/processes: (at most 64|NOT enforced)/);
    expect(limits.detail).toMatch(/nested user namespaces: (forbidden|allowed)/);
    // Root without a writable pids cgroup is the one case where the process limit cannot hold.
    const rootWithoutCgroup = describeLimits(
      { ...status, features: { disableUserns: true, prlimit: "/usr/bin/prlimit" } },
      c.exec,
      0,
    );
    expect(rootWithoutCgroup).toMatchObject({
      status: "warn",
      detail: expect.stringMatching(/exempts from RLIMIT_NPROC/),
    });
    expect(
      describeLimits({ ...status, features: { disableUserns: false, prlimit: "/usr/bin/prlimit" } }, c.exec, 1000),
    ).toMatchObject({
      status: "warn",
      detail: expect.stringMatching(/processes: at most 64 \(RLIMIT_NPROC\).*allowed/),
    });
  });
});
