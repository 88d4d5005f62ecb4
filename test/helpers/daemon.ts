import { type ChildProcess, execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import Database from "better-sqlite3";
import { afterEach, beforeEach } from "vitest";
import { packageRoot } from "../../src/paths.js";
import type { FakeOpenAI } from "../fakes/openai-server.js";
import { type FakeTelegram, startFakeTelegram } from "../fakes/telegram-server.js";
import { tempHome } from "./app.js";
import { fakeModelForFile } from "./model.js";
import { until as poll } from "./until.js";

const main = join(packageRoot(), "dist/src/cli/main.js");
const run = promisify(execFile);

export type Daemon = ChildProcess & { output: string[] };

function spawnGateway(cwd: string, env: Record<string, string>): Daemon {
  const child = spawn(process.execPath, [main, "gateway"], {
    cwd,
    env: { PATH: process.env.PATH, LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  }) as Daemon;
  child.output = [];
  child.stdout?.on("data", (chunk: Buffer) => child.output.push(chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => child.output.push(chunk.toString()));
  return child;
}

/** Starts the built `pincer gateway` on `home` as a user would, with exactly the environment given. */
export function startDaemon(home: string, env: Record<string, string>): Daemon {
  return spawnGateway(home, { HOME: home, PINCER_HOME: home, ...env });
}

/** Starts the built `pincer gateway` as a new user would (see pincerAsNewUser). */
export function startDaemonAsNewUser(env: Record<string, string>): Daemon {
  return spawnGateway(tempHome("pincer-cwd-"), { HOME: tempHome("pincer-user-"), PINCER_TIMEZONE: "UTC", ...env });
}

/** SIGTERM, as a service manager stops it; resolves to its exit code. */
export async function stopDaemon(child: ChildProcess): Promise<number | null> {
  const exited = once(child, "exit");
  child.kill("SIGTERM");
  const [code] = (await exited) as [number | null];
  return code;
}

/** kill -9: no shutdown code runs, as when the machine or the process dies. */
export async function killHard(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGKILL");
  await once(child, "exit");
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

async function runCli(args: string[], cwd: string, env: Record<string, string>): Promise<CliResult> {
  try {
    const { stdout, stderr } = await run(process.execPath, [main, ...args], {
      cwd,
      env: { PATH: process.env.PATH, ...env },
      timeout: 30_000,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as CliResult;
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** Runs one built CLI command (`pincer pairing revoke …`) to its end, on `home`. */
export function pincer(args: string[], home: string, env: Record<string, string> = {}): Promise<CliResult> {
  return runCli(args, home, { HOME: home, PINCER_HOME: home, ...env });
}

/**
 * Runs one built CLI command as a new user would: a fresh HOME, no PINCER_HOME unless `env` names
 * one, from an empty folder (so no .env is read).
 */
export function pincerAsNewUser(
  args: string[],
  env: Record<string, string>,
  cwd = tempHome("pincer-cwd-"),
): Promise<CliResult> {
  return runCli(args, cwd, { HOME: tempHome("pincer-user-"), PINCER_TIMEZONE: "UTC", ...env });
}

/**
 * Whether the daemon on `home` (SQLite) is at rest: nothing waits in its inbox or outbox and no job is due. Past this
 * point nothing is left that could be answered, sent or fired again, so a count taken now is final.
 */
export function atRest(home: string): boolean {
  const db = new Database(join(home, "pincer.db"), { readonly: true });
  try {
    const none = (sql: string, ...params: unknown[]) => (db.prepare(sql).get(...params) as { n: number }).n === 0;
    return (
      none("SELECT count(*) AS n FROM inbox WHERE status = 'pending'") &&
      none("SELECT count(*) AS n FROM outbox WHERE status = 'pending'") &&
      none("SELECT count(*) AS n FROM cron_jobs WHERE paused_at IS NULL AND next_run_at <= ?", Date.now())
    );
  } finally {
    db.close();
  }
}

/** The Telegram user the daemons on fakes let in (TELEGRAM_ALLOW_FROM), first name Ada. */
export const USER = 42;

export interface GatewayOnFakes {
  /** The fake model: one for the file, its request log emptied before each test. */
  readonly model: FakeOpenAI;
  /** The fake Bot API: a fresh one for each test. */
  readonly telegram: FakeTelegram;
  /**
   * A fresh PINCER_HOME, removed after the test once every daemon is dead: removed while one still runs, its late
   * writes (SQLite's -wal and -shm, the workspace) race the removal, which then fails the test with ENOTEMPTY.
   */
  home(prefix: string): string;
  /** Starts `pincer gateway` on `home`, pointed at the fakes, with `env` on top; killed after the test. */
  gateway(home: string, env?: Record<string, string>): Daemon;
  /** A private text message to the bot from user `from`, first name Ada. */
  say(text: string, from?: number): void;
  /** Polls like `until`; a timeout shows the output of every daemon this test started. */
  until<T>(check: () => T | undefined | null | false, what: string, ms?: number): Promise<T>;
}

/**
 * The built daemon against the fake model and the fake Bot API, on 127.0.0.1: call once at the top
 * of a test file. It adds the hooks that start the fakes and, after each test, kill -9 every daemon
 * still running. `env` is the file's own settings on top of the defaults (UTC, no sandbox, no
 * control page: its default port would be shared by test files running side by side).
 */
export function gatewayOnFakes(env: Record<string, string> = {}): GatewayOnFakes {
  const model = fakeModelForFile();
  let telegram: FakeTelegram | undefined;
  const daemons: Daemon[] = [];
  const homes: string[] = [];

  beforeEach(async () => {
    telegram = await startFakeTelegram();
  });
  afterEach(async () => {
    for (const daemon of daemons.splice(0)) await killHard(daemon);
    for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true });
    await telegram?.close();
    telegram = undefined;
  });

  const fakes: GatewayOnFakes = {
    model,
    get telegram() {
      if (!telegram) throw new Error("the fake Bot API is started for each test: use it inside one");
      return telegram;
    },
    home(prefix) {
      const home = tempHome(prefix);
      homes.push(home);
      return home;
    },
    gateway(home, extra = {}) {
      const daemon = startDaemon(home, {
        OPENAI_API_KEY: "test",
        OPENAI_BASE_URL: fakes.model.url,
        PINCER_SANDBOX: "none",
        PINCER_TIMEZONE: "UTC",
        PINCER_WEB_ADDR: "off",
        TELEGRAM_BOT_TOKEN: fakes.telegram.token,
        TELEGRAM_API_ROOT: fakes.telegram.apiRoot,
        TELEGRAM_ALLOW_FROM: String(USER),
        ...env,
        ...extra,
      });
      daemons.push(daemon);
      return daemon;
    },
    say(text, from = USER) {
      fakes.telegram.pushUpdate({
        message: {
          message_id: 0,
          date: 0,
          chat: { id: from, type: "private", first_name: "Ada" },
          from: { id: from, is_bot: false, first_name: "Ada" },
          text,
        },
      });
    },
    until(check, what, ms) {
      const outputs = () =>
        daemons
          .map((d, i) => `--- daemon ${i + 1} (${d.signalCode ?? d.exitCode ?? "running"}) ---\n${d.output.join("")}`)
          .join("\n");
      return poll(check, what, ms, outputs);
    },
  };
  return fakes;
}
