import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { databasePath, packageRoot } from "../src/paths.js";
import { openDatabase } from "../src/store/database.js";
import { HelperRunStore } from "../src/store/helper-runs.js";
import { SqliteJournal } from "../src/store/journal.js";
import { type FakeOpenAI, startFakeOpenAI } from "./fakes/openai-server.js";
import { type FakeTelegram, startFakeTelegram } from "./fakes/telegram-server.js";
import { tempHome } from "./helpers/app.js";

/** A helper cut short by kill -9 of the built daemon: the next start tells the chat once. */

const main = join(packageRoot(), "dist/src/cli/main.js");
const USER = 42;
let model: FakeOpenAI;
let telegram: FakeTelegram;
const children: ChildProcess[] = [];

beforeAll(async () => {
  model = await startFakeOpenAI();
  telegram = await startFakeTelegram();
});
afterAll(async () => {
  await telegram.close();
  await model.close();
});
afterEach(async () => {
  for (const child of children.splice(0)) await killHard(child);
});

function gateway(home: string): ChildProcess & { output: string[] } {
  const child = spawn(process.execPath, [main, "gateway"], {
    cwd: home,
    env: {
      PATH: process.env.PATH,
      HOME: home,
      OPENAI_API_KEY: "test",
      OPENAI_BASE_URL: model.url,
      PINCER_HOME: home,
      PINCER_SANDBOX: "none",
      PINCER_TIMEZONE: "UTC",
      TELEGRAM_BOT_TOKEN: telegram.token,
      TELEGRAM_API_ROOT: telegram.apiRoot,
      TELEGRAM_ALLOW_FROM: String(USER),
      PINCER_WEB_ADDR: "off",
      LOG_LEVEL: "info",
    },
    stdio: ["ignore", "pipe", "pipe"],
  }) as ChildProcess & { output: string[] };
  child.output = [];
  child.stdout?.on("data", (chunk: Buffer) => child.output.push(chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => child.output.push(chunk.toString()));
  children.push(child);
  return child;
}

async function killHard(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGKILL");
  await once(child, "exit");
}

function say(text: string): void {
  telegram.pushUpdate({
    message: {
      message_id: 0,
      date: 0,
      chat: { id: USER, type: "private", first_name: "Ada" },
      from: { id: USER, is_bot: false, first_name: "Ada" },
      text,
    },
  });
}

function pendingOutbox(home: string): number {
  const db = openDatabase(databasePath(home));
  try {
    return new SqliteJournal(db).pendingOutbound("telegram").length;
  } finally {
    db.close();
  }
}

const isHelper = (content: unknown) => String(content).startsWith("You are a background helper");

describe("spawn across kill -9", () => {
  it("marks the helper interrupted and tells the chat exactly once", async () => {
    model.respond((request) => {
      if (isHelper(request.messages[0]?.content)) return { content: "never arrives", delayMs: 60_000 };
      const last = request.messages.at(-1);
      if (last?.role === "tool") return { content: "A helper is on it." };
      const text = String(last?.content ?? "");
      if (text.startsWith("[system: helper]"))
        return { content: `NOTICE ${text.includes("restarted") ? "restart" : "?"}` };
      if (text === "ping") return { content: "pong" };
      return { toolCalls: [{ name: "spawn", arguments: { task: "count the stars", label: "stars" } }] };
    });
    const home = tempHome();
    const first = gateway(home);
    say("count the stars, take your time");
    await telegram.waitFor(() => telegram.sent.find((m) => m.text === "A helper is on it."), 20_000);
    await telegram.waitFor(() => model.requests.some((r) => isHelper(r.messages[0]?.content)), 10_000);
    await killHard(first);

    const second = gateway(home);
    const notice = await telegram.waitFor(() => telegram.sent.find((m) => m.text.startsWith("NOTICE")), 20_000);
    expect(notice).toMatchObject({ chatId: String(USER), text: "NOTICE restart" });
    // Killed only once the outbox knows the notice went out: a kill between Telegram's answer and
    // that mark would resend it (at-least-once delivery, the outbox's business, not the helpers').
    await telegram.waitFor(() => pendingOutbox(home) === 0, 10_000);
    await killHard(second);

    const third = gateway(home);
    say("ping");
    await telegram.waitFor(() => telegram.sent.find((m) => m.text === "pong"), 20_000);
    await killHard(third);
    expect(telegram.sent.filter((m) => m.text.startsWith("NOTICE"))).toHaveLength(1);
    // The interrupted helper was reported in one turn, not once per start.
    expect(
      model.requests.filter((r) => String(r.messages.at(-1)?.content).startsWith("[system: helper]")),
    ).toHaveLength(1);
    const db = openDatabase(databasePath(home));
    try {
      expect(new HelperRunStore(db).recent(5).map((r) => [r.label, r.status])).toEqual([["stars", "interrupted"]]);
    } finally {
      db.close();
    }
  });
});
