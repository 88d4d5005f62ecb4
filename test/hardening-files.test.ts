/**
 * Attacks on the file paths around the sandbox, through the whole daemon (createApp, the agent
 * worker, the real model client against the scripted server, the real bwrap): a sandboxed command
 * swapping a folder and a symlink while another chat uses the file tools, FIFOs and links as files
 * and prompt files, a catastrophic grep pattern, a dangling symlink at start-up.
 */
import { execFileSync } from "node:child_process";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { Writable } from "node:stream";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type App, type AppOptions, createApp } from "../src/app.js";
import { type Config, loadConfig } from "../src/config/config.js";
import type { ChatRequest, FakeReply } from "./fakes/openai-server.js";
import { recordingChannel, tempHome, userMessage } from "./helpers/app.js";
import { chatOf, fakeModelForFile } from "./helpers/model.js";
import { hasSystemPackage } from "./helpers/system-packages.js";
import { until } from "./helpers/until.js";

const bwrap = hasSystemPackage("bwrap", "bubblewrap");

const HOST_SECRET = "host-secret-4e1d77";
const DOTENV_SECRET = "dotenv-secret-90ac1f";

const fake = fakeModelForFile();
let root: string;
let home: string;
let workspace: string;
let outside: string;
let app: App | undefined;
let logLines: string[];

beforeEach(() => {
  root = realpathSync(tempHome("pincer-hardening-"));
  home = join(root, "home");
  workspace = join(home, "workspace");
  outside = join(root, "outside");
  mkdirSync(workspace, { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(outside, "target.txt"), `${HOST_SECRET}\n`);
  writeFileSync(join(home, ".env"), `OPENAI_API_KEY=${DOTENV_SECRET}\n`);
  logLines = [];
});

afterEach(async () => {
  await app?.stop();
  app = undefined;
  rmSync(root, { recursive: true, force: true });
});

async function start(adjust?: (config: Config) => void, options: Partial<AppOptions> = {}) {
  const config = loadConfig({
    OPENAI_API_KEY: "test",
    OPENAI_BASE_URL: fake.url,
    PINCER_HOME: home,
    PINCER_SANDBOX: "bwrap",
    PINCER_TIMEZONE: "UTC",
  });
  config.agent.modelRetries = 0;
  // The guard would stop the attacker's `ln -s /host/path` on sight; the sandbox must hold without it.
  config.exec.restrictToWorkspace = false;
  adjust?.(config);
  const sink = new Writable({
    write(chunk, _enc, done) {
      logLines.push(String(chunk));
      done();
    },
  });
  app = await createApp(config, { log: pino({ level: "warn" }, sink), ...options });
  const channel = recordingChannel(app);
  await app.start([channel]);
  return channel;
}

function running(): App {
  if (!app) throw new Error("the app is not running");
  return app;
}

/** The chat a request belongs to, from the runtime line of its system prompt. */
function toolResults(request: ChatRequest): string[] {
  return request.messages.filter((m) => m.role === "tool").map((m) => String(m.content));
}

/** Requests since the last user message: 0 for the first reply of a turn. */
function round(request: ChatRequest): number {
  const lastUser = request.messages.map((m) => m.role).lastIndexOf("user");
  return request.messages.slice(lastUser).filter((m) => m.role === "assistant").length;
}

const SWAPPER = `
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
os.makedirs("swap", exist_ok=True)
open("swap/target.txt", "w").write("inside\\n")
os.symlink(os.environ["OUTSIDE"], "link")
open("swapping", "w").close()
n = 0
# Until the victim has made its calls; the deadline (inside exec's 60 s) stops one nobody stops.
end = time.time() + 45
while time.time() < end and not os.path.exists("stop-swapping"):
    libc.renameat2(-100, b"swap", -100, b"link", 2)  # RENAME_EXCHANGE
    n += 1
open("swapped", "w").write(str(n))
print("swaps", n)
`;

describe.skipIf(!bwrap)("file tools against a sandboxed command swapping a folder and a symlink", () => {
  it("never read, write, list or search a host file, over hundreds of calls", async () => {
    // Bounded by calls, not by time: on a busy machine the victim makes fewer calls a second,
    // so the swapper runs until the victim is done. Four rounds of 54 calls keep the turn far
    // inside the context budget (a longer turn would have its older results cut to fit).
    const CALLS = 216;
    const victimResults: string[] = [];
    let victimRounds = 0;
    let swapperStoppedFirst = false;
    fake.respond(async (request): Promise<FakeReply> => {
      const chat = chatOf(request);
      if (chat === "attacker") {
        if (round(request) > 0) return { content: "swapped" };
        return {
          toolCalls: [
            {
              name: "exec",
              arguments: { command: `OUTSIDE='${outside}' python3 swapper.py` },
            },
          ],
        };
      }
      // The victim: keeps calling the file tools on the swapped folder while the swapping runs.
      victimResults.push(...toolResults(request).slice(-54));
      await until(() => existsSync(join(workspace, "swapping")), "the swapper to start");
      if (victimResults.length >= CALLS || victimRounds >= 8) {
        writeFileSync(join(workspace, "stop-swapping"), "");
        return { content: "victim done" };
      }
      // Calls made after the swapping stopped would race nothing.
      if (existsSync(join(workspace, "swapped"))) {
        swapperStoppedFirst = true;
        return { content: "victim done" };
      }
      victimRounds++;
      const calls: FakeReply["toolCalls"] = [];
      for (let i = 0; i < 10; i++) {
        calls.push(
          { name: "read_file", arguments: { path: "swap/target.txt" } },
          { name: "list_dir", arguments: { path: "swap" } },
          { name: "glob", arguments: { pattern: "*.txt", path: "swap" } },
          { name: "write_file", arguments: { path: "swap/target.txt", content: "written by the victim\n" } },
          { name: "write_file", arguments: { path: `swap/new-${victimRounds}-${i}.txt`, content: "new\n" } },
        );
        // grep starts a worker per call (tens of ms): fewer of them keep the rounds quick.
        if (i % 3 === 0) calls.push({ name: "grep", arguments: { pattern: "secret|inside", path: "swap" } });
      }
      return { toolCalls: calls };
    });
    const channel = await start((config) => {
      config.agent.maxIterations = 30;
    });
    writeFileSync(join(workspace, "swapper.py"), SWAPPER);
    await running().bus.publishInbound(userMessage("attacker", "swap"));
    await until(() => existsSync(join(workspace, "swapping")), "the swapper to start", 20_000);
    await running().bus.publishInbound(userMessage("victim", "work"));
    await until(
      () => channel.sent.length >= 2,
      "both chats to finish",
      75_000,
      () => JSON.stringify(channel.sent),
    );

    // The host folder is exactly as it was: same file, same content, nothing added.
    expect(readdirSync(outside)).toEqual(["target.txt"]);
    expect(readFileSync(join(outside, "target.txt"), "utf8")).toBe(`${HOST_SECRET}\n`);
    for (const result of victimResults) expect(result).not.toContain(HOST_SECRET);
    // The calls really raced the swaps: all of them while it swapped, some reached the real
    // folder, some met the symlink.
    expect(swapperStoppedFirst).toBe(false);
    expect(victimResults.length).toBeGreaterThanOrEqual(CALLS);
    expect(victimResults.some((r) => r.startsWith("Error:") && /symlink|changed while/.test(r))).toBe(true);
    expect(victimResults.some((r) => /^(Created|Overwrote) swap\//.test(r))).toBe(true);
    expect(Number(readFileSync(join(workspace, "swapped"), "utf8"))).toBeGreaterThan(CALLS);
  }, 90_000);
});

describe("FIFOs, sockets and links as files", () => {
  it.skipIf(!bwrap)(
    "a FIFO passed to read_file (four at once) fails at once; other chats and exec keep working",
    async () => {
      for (const name of ["p1", "p2", "p3", "p4"]) execFileSync("mkfifo", [join(workspace, name)]);
      fake.respond((request) => {
        const chat = chatOf(request);
        if (round(request) > 0) return { content: `${chat}: ${toolResults(request).join(" | ")}` };
        if (chat === "fifo") {
          return {
            toolCalls: [
              ...["p1", "p2", "p3", "p4"].map((path) => ({ name: "read_file", arguments: { path } })),
              { name: "write_file", arguments: { path: "p1", content: "x" } },
              { name: "edit_file", arguments: { path: "p2", old_text: "a", new_text: "b" } },
              { name: "grep", arguments: { pattern: "x", path: "p3" } },
            ],
          };
        }
        return { toolCalls: [{ name: "exec", arguments: { command: "echo exec-alive" } }] };
      });
      const channel = await start();
      const started = Date.now();
      await running().bus.publishInbound(userMessage("fifo", "read the pipes"));
      await channel.waitFor(1);
      expect(Date.now() - started).toBeLessThan(5000);
      const reply = channel.sent[0].text;
      expect(reply.match(/is a named pipe \(FIFO\); only regular files can be read or written/g)?.length).toBe(7);

      await running().bus.publishInbound(userMessage("other", "still there?"));
      await channel.waitFor(2);
      expect(channel.sent[1].text).toBe("other: exec-alive");
    },
    30_000,
  );

  it("skips a FIFO, a symlinked and an oversized prompt file with one warning each, and answers", async () => {
    await start();
    await app?.stop();
    app = undefined;
    rmSync(join(workspace, "SOUL.md"));
    execFileSync("mkfifo", [join(workspace, "SOUL.md")]);
    rmSync(join(workspace, "MEMORY.md"));
    symlinkSync(join(home, ".env"), join(workspace, "MEMORY.md"));
    writeFileSync(join(workspace, "USER.md"), "u".repeat(200 * 1024));
    mkdirSync(join(workspace, "skills", "evil"), { recursive: true });
    execFileSync("mkfifo", [join(workspace, "skills", "evil", "SKILL.md")]);
    symlinkSync(outside, join(workspace, "skills", "linked"));
    fake.respond(() => ({ content: "answered" }));
    const channel = await start();
    await running().bus.publishInbound(userMessage("prompt", "hello"));
    await channel.waitFor(1);
    expect(channel.sent[0].text).toBe("answered");
    const system = String(fake.requests[0].messages[0].content);
    expect(system).toContain("## AGENTS.md");
    expect(system).not.toContain("## SOUL.md");
    expect(system).not.toContain("## MEMORY.md");
    expect(system).not.toContain("## USER.md");
    expect(system).not.toContain(DOTENV_SECRET);
    const warnings = logLines.filter((l) => /prompt file skipped|skill skipped/.test(l));
    const said = warnings.map((l) => {
      const { file, reason } = JSON.parse(l);
      return `${file}: ${reason}`;
    });
    expect(said.sort()).toEqual([
      expect.stringMatching(/skills\/evil\/SKILL.md: "skills\/evil\/SKILL.md" is a named pipe/),
      expect.stringMatching(/^MEMORY.md: "MEMORY.md" is a symlink; it is left alone/),
      expect.stringMatching(/^SOUL.md: "SOUL.md" is a named pipe \(FIFO\)/),
      expect.stringMatching(/^USER.md: larger than 131072 bytes/),
    ]);
  }, 30_000);
});

describe("prompt files served from memory between turns", () => {
  /** Sets the file's times back to the nanosecond after `edit`: only its ctime shows the change. */
  function keepTimes(path: string, edit: () => void): void {
    execFileSync("touch", ["-r", path, `${path}.times`]);
    edit();
    execFileSync("touch", ["-r", `${path}.times`, path]);
    rmSync(`${path}.times`);
  }

  it("refuses a cached prompt file swapped for a symlink at the next turn, and sees an edit that kept size and mtime", async () => {
    fake.respond(() => ({ content: "answered" }));
    // Every file counts as settled at once, so the second turn is served from memory.
    const channel = await start(undefined, { readCache: { now: () => Date.now() + 60_000 } });
    const soul = join(workspace, "SOUL.md");
    writeFileSync(soul, "soul version one\n");
    const system = (i: number) => String(fake.requests[i].messages[0].content);
    for (const n of [1, 2]) {
      await running().bus.publishInbound(userMessage("cache", `turn ${n}`));
      await channel.waitFor(n);
      expect(system(n - 1)).toContain("soul version one");
    }
    rmSync(soul);
    symlinkSync(join(home, ".env"), soul);
    await running().bus.publishInbound(userMessage("cache", "turn 3"));
    await channel.waitFor(3);
    expect(system(2)).not.toContain("## SOUL.md");
    expect(system(2)).not.toContain(DOTENV_SECRET);
    const skipped = logLines.map((l) => JSON.parse(l)).filter((l) => l.msg === "prompt file skipped");
    expect(skipped.map((l) => l.reason)).toContainEqual(expect.stringMatching(/^"SOUL.md" is a symlink/));

    rmSync(soul);
    writeFileSync(soul, "soul version one\n");
    for (const n of [4, 5]) {
      await running().bus.publishInbound(userMessage("cache", `turn ${n}`));
      await channel.waitFor(n);
      expect(system(n - 1)).toContain("soul version one");
    }
    keepTimes(soul, () => writeFileSync(soul, "soul version two\n"));
    await running().bus.publishInbound(userMessage("cache", "turn 6"));
    await channel.waitFor(6);
    expect(system(5)).toContain("soul version two");
  }, 30_000);
});

describe("grep with a catastrophic pattern", () => {
  it("answers (a+)+$ at once and stops a pattern too slow even for RE2 within the tool timeout", async () => {
    writeFileSync(join(workspace, "a.txt"), `${"a".repeat(5000)}b\n`.repeat(50));
    writeFileSync(join(workspace, "slow.txt"), `${"a".repeat(10_000)}\n`.repeat(100));
    const order: string[] = [];
    fake.respond((request) => {
      const chat = chatOf(request);
      if (round(request) > 0) {
        order.push(chat);
        return { content: `${chat}: ${toolResults(request).join(" | ")}` };
      }
      if (chat === "regex") {
        return {
          toolCalls: [
            { name: "grep", arguments: { pattern: "(a+)+$", glob: "a.txt" } },
            { name: "grep", arguments: { pattern: "(?:a?){1000}a{1000}", path: "slow.txt" } },
          ],
        };
      }
      return { content: `${chat}: hi` };
    });
    const threadsBefore = threadCount();
    const channel = await start((config) => {
      config.agent.toolTimeoutSeconds = 3;
    });
    const started = Date.now();
    await running().bus.publishInbound(userMessage("regex", "search"));
    await until(() => fake.requests.some((r) => chatOf(r) === "regex"), "the grep turn");
    await new Promise((r) => setTimeout(r, 300));
    await running().bus.publishInbound(userMessage("other", "hello"));
    await channel.waitFor(2);
    // The other chat was answered while the slow search ran; the search ended within the timeout.
    expect(channel.sent.map((m) => m.chatId)).toEqual(["other", "regex"]);
    expect(Date.now() - started).toBeLessThan(8000);
    const reply = channel.sent[1].text;
    expect(reply).toMatch(
      /^regex: No matches for \/\(a\+\)\+\$\/ in 1 file\(s\)\. \| Error: grep timed out after 3 s\.$/,
    );
    // The matching thread was terminated, not left running.
    await until(() => threadCount() <= threadsBefore, "the grep worker to end");
  }, 30_000);
});

describe("start-up", () => {
  it("leaves a dangling HEARTBEAT.md -> config.json link alone, and the next start still works", async () => {
    symlinkSync(join(home, "config.json"), join(workspace, "HEARTBEAT.md"));
    await start();
    expect(existsSync(join(home, "config.json"))).toBe(false);
    expect(lstatSync(join(workspace, "HEARTBEAT.md")).isSymbolicLink()).toBe(true);
    expect(logLines.some((l) => /template file not created/.test(l) && /HEARTBEAT.md/.test(l))).toBe(true);
    // The other template files were created as usual.
    expect(readFileSync(join(workspace, "AGENTS.md"), "utf8").length).toBeGreaterThan(0);
    await app?.stop();
    app = undefined;
    writeFileSync(join(home, "config.json"), JSON.stringify({ exec: { timeoutSeconds: 7 } }));
    await start();
    expect(readFileSync(join(home, "config.json"), "utf8")).toBe(JSON.stringify({ exec: { timeoutSeconds: 7 } }));
    expect(running().config.exec.timeoutSeconds).toBe(7);
  });
});

function threadCount(): number {
  return Number(/Threads:\s+(\d+)/.exec(readFileSync("/proc/self/status", "utf8"))?.[1]);
}
