/**
 * The prompt files and skills served from memory (ReadCache), attacked by the one who owns the
 * workspace: the model's own shell, in the real bwrap sandbox, through the whole app. Each turn's
 * prompt fills the cache; the turn's exec then swaps something under it; the next turn's prompt
 * must show exactly what a fresh race-free read would (issue 9): no link followed, no FIFO
 * blocked on, no host file, every edit seen.
 */
import { existsSync, mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type App, createApp } from "../src/app.js";
import { loadConfig } from "../src/config/config.js";
import type { ChatRequest, FakeReply } from "./fakes/openai-server.js";
import { recordingChannel, tempHome, userMessage } from "./helpers/app.js";
import { chatOf, fakeModelForFile } from "./helpers/model.js";
import { hasSystemPackage } from "./helpers/system-packages.js";
import { until } from "./helpers/until.js";

const bwrap = hasSystemPackage("bwrap", "bubblewrap");

/** The host's secret and the workspace's own files are all 19 bytes: a swap keeps every size. */
const HOST_SECRET = "host-secret-4e1d77\n";
const SOUL_ONE = "soul-version-one!!\n";

const fake = fakeModelForFile();
let root: string;
let home: string;
let workspace: string;
let outside: string;
let app: App | undefined;

beforeEach(() => {
  root = realpathSync(tempHome("pincer-readcache-attack-"));
  home = join(root, "home");
  workspace = join(home, "workspace");
  outside = join(root, "outside");
  for (const dir of [join(workspace, "skills", "one"), join(outside, "skill"), join(outside, "skills", "one")]) {
    mkdirSync(dir, { recursive: true });
  }
  writeFileSync(join(outside, "target.txt"), HOST_SECRET);
  const hostSkill = `---\nname: one\ndescription: ${HOST_SECRET.trim()}\n---\n`;
  writeFileSync(join(outside, "skill", "SKILL.md"), hostSkill);
  writeFileSync(join(outside, "skills", "one", "SKILL.md"), hostSkill);
  writeFileSync(join(workspace, "SOUL.md"), SOUL_ONE);
  writeFileSync(join(workspace, "USER.md"), "user-notes\n");
  writeFileSync(join(workspace, "skills", "one", "SKILL.md"), "---\nname: one\ndescription: inside skill\n---\n");
});

afterEach(async () => {
  await app?.stop();
  app = undefined;
  rmSync(root, { recursive: true, force: true });
});

async function start() {
  const config = loadConfig({
    OPENAI_API_KEY: "test",
    OPENAI_BASE_URL: fake.url,
    PINCER_HOME: home,
    PINCER_SANDBOX: "bwrap",
    PINCER_TIMEZONE: "UTC",
    LOG_LEVEL: "silent",
  });
  config.agent.modelRetries = 0;
  // The guard would stop `ln -s /host/path` on sight; the cache must hold without it.
  config.exec.restrictToWorkspace = false;
  // Every file counts as settled at once: each prompt remembers what it read, the hardest case.
  app = await createApp(config, { log: pino({ level: "silent" }), readCache: { now: () => Date.now() + 60_000 } });
  const channel = recordingChannel(app);
  await app.start([channel]);
  return { app, channel };
}

function isFirstRequestOfTurn(request: ChatRequest): boolean {
  return request.messages[request.messages.length - 1]?.role === "user";
}

interface Step {
  /** What the model's shell runs in this turn, after this turn's prompt was built. */
  command: string;
  /** What the next turn's prompt must show. */
  next: (prompt: string) => void;
}

const hasSoul = (text: string) => (p: string) => expect(p).toContain(`## SOUL.md\n\n${text.trim()}`);
const noSoul = (p: string) => expect(p).not.toContain("## SOUL.md");
const skill = (description: string) => (p: string) => expect(p).toContain(`- one: ${description} (`);
const noSkill = (p: string) => expect(p).not.toMatch(/^- one: /m);

describe.skipIf(!bwrap)("prompt files served from memory, swapped by the sandboxed shell between turns", () => {
  it("never shows a host file, a link's target or a stale file, whatever the shell swaps in", async () => {
    const o = outside;
    const steps: Step[] = [
      { command: "true", next: hasSoul(SOUL_ONE) },
      // A prompt file swapped for a link to a host file of the same size.
      { command: `mv SOUL.md soul.bak && ln -s ${o}/target.txt SOUL.md`, next: noSoul },
      { command: "rm SOUL.md && mv soul.bak SOUL.md", next: hasSoul(SOUL_ONE) },
      // A skill's folder, then the whole skills folder, swapped for a link to a host folder.
      { command: `mv skills/one one.bak && ln -s ${o}/skill skills/one`, next: noSkill },
      { command: "rm skills/one && mv one.bak skills/one", next: skill("inside skill") },
      { command: `mv skills skills.bak && ln -s ${o}/skills skills`, next: noSkill },
      { command: "rm skills && mv skills.bak skills", next: skill("inside skill") },
      // A folder renamed and another put in its place: same names, sizes and times, new content.
      {
        command: [
          "touch -r skills times",
          "mv skills/one skills/old",
          "mkdir skills/one",
          "printf -- '---\\nname: one\\ndescription: second skill\\n---\\n' > skills/one/SKILL.md",
          "touch -r skills/old/SKILL.md skills/one/SKILL.md",
          "touch -r skills/old skills/one",
          "rm skills/old/SKILL.md",
          "rmdir skills/old",
          "touch -r times skills",
          "rm times",
        ].join(" && "),
        next: skill("second skill"),
      },
      // An edit of the same size with the mtime put back.
      {
        command:
          "touch -r SOUL.md times && printf 'soul-version-two!!\\n' > SOUL.md && touch -r times SOUL.md && rm times",
        next: hasSoul("soul-version-two!!"),
      },
      // A hard link, then its other name edited in place (same inode, size and mtime).
      {
        command: "rm SOUL.md && printf 'soul-version-3!!!!\\n' > soul.real && ln soul.real SOUL.md",
        next: hasSoul("soul-version-3!!!!"),
      },
      {
        command:
          "touch -r soul.real times && printf 'soul-version-4!!!!\\n' > soul.real && touch -r times soul.real && rm times",
        next: hasSoul("soul-version-4!!!!"),
      },
      // A FIFO swapped in: skipped, never blocked on.
      { command: "rm SOUL.md && mkfifo SOUL.md", next: noSoul },
      // A cached file grown past the prompt's limit (128 KiB).
      {
        command: "rm SOUL.md soul.real && head -c 200000 /dev/zero | tr '\\0' u > USER.md",
        next: (p) => expect(p).not.toContain("## USER.md"),
      },
      { command: "printf 'user-notes\\n' > USER.md", next: (p) => expect(p).toContain("## USER.md\n\nuser-notes") },
      // Deleted: the prompt drops it.
      { command: "rm USER.md", next: (p) => expect(p).not.toContain("## USER.md") },
    ];
    const prompts: string[] = [];
    const hits: number[] = [];
    const execResults: string[] = [];
    fake.respond((request): FakeReply => {
      const last = request.messages[request.messages.length - 1];
      if (!isFirstRequestOfTurn(request)) {
        execResults.push(String(last.content));
        return { content: "done" };
      }
      prompts.push(String(request.messages[0].content));
      hits.push(app?.files.stats.hits ?? 0);
      const step = steps[prompts.length - 1];
      return step ? { toolCalls: [{ name: "exec", arguments: { command: step.command } }] } : { content: "done" };
    });
    const { app: running, channel } = await start();
    for (let i = 0; i <= steps.length; i++) {
      await running.bus.publishInbound(userMessage("attacker", `turn ${i}`));
      await channel.waitFor(i + 1);
    }
    expect(prompts).toHaveLength(steps.length + 1);
    for (const [i, result] of execResults.entries())
      expect(result, steps[i].command).not.toMatch(/^Error|exit code [1-9]/);
    for (const [i, step] of steps.entries()) {
      const next = prompts[i + 1];
      expect(next).not.toContain(HOST_SECRET.trim());
      step.next(next);
    }
    // The attacks met a filled cache: the second prompt (nothing changed) came from memory.
    expect(hits[1]).toBeGreaterThan(hits[0]);
    expect(running.files.stats.hits).toBeGreaterThan(steps.length);
  }, 60_000);
});

const SWAPPER = `
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
os.symlink(os.environ["TARGET"], "soul-link")
open("swapping", "w").close()
n = 0
end = time.time() + 6
while time.time() < end and not os.path.exists("stop-swapping"):
    libc.renameat2(-100, b"SOUL.md", -100, b"soul-link", 2)  # RENAME_EXCHANGE
    n += 1
open("swapped", "w").write(str(n))
`;

describe.skipIf(!bwrap)("prompt files served from memory while the sandboxed shell swaps them", () => {
  it("never puts the host file into a prompt, over many turns racing thousands of swaps", async () => {
    const victimPrompts: string[] = [];
    fake.respond((request): FakeReply => {
      if (chatOf(request) === "attacker") {
        if (!isFirstRequestOfTurn(request)) return { content: "swapped" };
        return {
          toolCalls: [{ name: "exec", arguments: { command: `TARGET='${outside}/target.txt' python3 swapper.py` } }],
        };
      }
      victimPrompts.push(String(request.messages[0].content));
      return { content: "ok" };
    });
    const { app: running, channel } = await start();
    writeFileSync(join(workspace, "swapper.py"), SWAPPER);
    await running.bus.publishInbound(userMessage("attacker", "swap"));
    await until(() => existsSync(join(workspace, "swapping")), "the swapper to start", 20_000);
    let turns = 0;
    while (turns < 150 && !existsSync(join(workspace, "swapped"))) {
      await running.bus.publishInbound(userMessage("victim", `turn ${turns}`));
      turns++;
      await channel.waitFor(turns);
    }
    writeFileSync(join(workspace, "stop-swapping"), "");
    await channel.waitFor(turns + 1);

    for (const prompt of victimPrompts) expect(prompt).not.toContain(HOST_SECRET.trim());
    // The turns really raced the swaps: some prompts had the file, some met the link.
    expect(victimPrompts.length).toBeGreaterThanOrEqual(20);
    expect(victimPrompts.some((p) => p.includes(SOUL_ONE.trim()))).toBe(true);
    expect(victimPrompts.some((p) => !p.includes("## SOUL.md"))).toBe(true);
    expect(Number(readFileSync(join(workspace, "swapped"), "utf8"))).toBeGreaterThan(1000);
  }, 60_000);
});
