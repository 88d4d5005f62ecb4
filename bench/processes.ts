/**
 * The two processes every channel figure compares, started as a user would start them: pincer's
 * built daemon (`node dist/src/cli/main.js gateway`) and the bare bot in `baselines/bare-bot.mjs`,
 * each against its own fake Bot API server, fake Discord server and one shared fake model.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { packageRoot } from "../src/paths.js";
import { FAKE_DISCORD_TOKEN, type FakeDiscord, startFakeDiscord } from "../test/fakes/discord-server.js";
import type { FakeOpenAI } from "../test/fakes/openai-server.js";
import { type FakeTelegram, startFakeTelegram } from "../test/fakes/telegram-server.js";

export type Kind = "pincer" | "baseline";

export interface Platforms {
  telegram: FakeTelegram;
  discord: FakeDiscord;
  close(): Promise<void>;
}

export async function startPlatforms(): Promise<Platforms> {
  const [telegram, discord] = await Promise.all([
    startFakeTelegram(),
    startFakeDiscord({ heartbeatIntervalMs: 30_000 }),
  ]);
  return {
    telegram,
    discord,
    close: async () => {
      await Promise.all([telegram.close(), discord.close()]);
    },
  };
}

export type BotMemory = NodeJS.MemoryUsage & { spaces: Record<string, number> };

export interface Bot {
  kind: Kind;
  child: ChildProcess;
  /** Milliseconds from spawn until Telegram is polled and Discord's IDENTIFY arrived. */
  readyMs: number;
  rssBytes(): number;
  /** process.memoryUsage() inside the bot, with each V8 heap space's size; only for a bot started with `probe`. */
  memory(): Promise<BotMemory>;
  stop(): Promise<void>;
}

export interface StartOptions {
  model: FakeOpenAI;
  platforms: Platforms;
  channels?: { telegram: boolean; discord: boolean };
  /** Extra config-file settings for pincer (e.g. agent.maxConcurrentTurns). */
  config?: Record<string, unknown>;
  /** Extra environment, e.g. NODE_OPTIONS for a profile or a heap snapshot. */
  env?: NodeJS.ProcessEnv;
  /** Preload `memory-probe.mjs` and open an IPC channel, so `memory()` can ask the bot. */
  probe?: boolean;
  /** Not to wait for the platforms (a second clustered process, which holds no channel). */
  unwatched?: boolean;
  /** Another built checkout whose pincer to start (`npm run bench -- --against DIR`); default: this one. */
  root?: string;
}

/** Starts one bot as a child process and waits until both platforms see it connected. */
export async function startBot(kind: Kind, options: StartOptions): Promise<Bot> {
  const { telegram, discord } = options.platforms;
  const channels = options.channels ?? { telegram: true, discord: true };
  const home = mkdtempSync(join(tmpdir(), `pincer-bench-${kind}-`));
  if (options.config) {
    const { writeFileSync } = await import("node:fs");
    writeFileSync(join(home, "config.json"), JSON.stringify(options.config));
  }
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: home,
    OPENAI_API_KEY: "bench",
    OPENAI_BASE_URL: options.model.url,
    PINCER_HOME: home,
    PINCER_SANDBOX: "none",
    PINCER_TIMEZONE: "UTC",
    PINCER_WEB_ADDR: "off",
    LOG_LEVEL: "warn",
    ...(channels.telegram
      ? { TELEGRAM_BOT_TOKEN: telegram.token, TELEGRAM_API_ROOT: telegram.apiRoot, TELEGRAM_ALLOW_FROM: "*" }
      : {}),
    ...(channels.discord
      ? { DISCORD_BOT_TOKEN: FAKE_DISCORD_TOKEN, DISCORD_API_URL: discord.apiUrl, DISCORD_ALLOW_FROM: "*" }
      : {}),
    ...options.env,
  };
  const script =
    kind === "pincer"
      ? [join(options.root ?? packageRoot(), "dist/src/cli/main.js"), "gateway"]
      : [join(packageRoot(), "bench/baselines/bare-bot.mjs")];
  const polls = telegram.callsTo("getUpdates").length;
  const identifies = discord.gateway.filter((g) => g.op === 2).length;
  const started = performance.now();
  const probe = options.probe ? ["--import", pathToFileURL(join(packageRoot(), "bench/memory-probe.mjs")).href] : [];
  const child = spawn(process.execPath, [...probe, ...script], {
    env,
    cwd: home,
    stdio: ["ignore", "ignore", "pipe", ...(options.probe ? (["ipc"] as const) : [])],
  });
  let stderr = "";
  child.stderr?.on("data", (chunk) => {
    stderr += chunk;
  });
  const ready = () =>
    options.unwatched ||
    ((!channels.telegram || telegram.callsTo("getUpdates").length > polls) &&
      (!channels.discord || discord.gateway.filter((g) => g.op === 2).length > identifies));
  const deadline = Date.now() + 30_000;
  while (!ready()) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`${kind} did not get ready:\n${stderr}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  const readyMs = performance.now() - started;
  return {
    kind,
    child,
    readyMs,
    rssBytes: () => {
      const status = readFileSync(`/proc/${child.pid}/status`, "utf8");
      return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
    },
    memory: () =>
      new Promise((resolve, reject) => {
        if (!child.connected) return reject(new Error(`${kind} was not started with probe`));
        child.once("message", (usage) => resolve(usage as BotMemory));
        child.send("memory");
      }),
    async stop() {
      if (child.exitCode === null) {
        const exited = once(child, "exit");
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(home, { recursive: true, force: true });
    },
  };
}

/** Confirms every update handed out so far, so the next bot on this fake starts with an empty queue. */
export async function drainTelegram(telegram: FakeTelegram): Promise<void> {
  const response = await fetch(`${telegram.apiRoot}/bot${telegram.token}/getUpdates?offset=${2 ** 31 - 1}&timeout=0`);
  await response.arrayBuffer();
}
