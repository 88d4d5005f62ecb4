import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { databasePath, packageRoot } from "../src/paths.js";
import { listJobsText } from "../src/scheduler/cron-commands.js";
import { openDatabase } from "../src/store/database.js";
import { type FakeOpenAI, type FakeReply, startFakeOpenAI } from "./fakes/openai-server.js";
import { type FakeTelegram, type SentMessage, startFakeTelegram } from "./fakes/telegram-server.js";
import { tempHome } from "./helpers/app.js";

/**
 * The done-when of reminders: the built daemon (`pincer gateway`) talking to the fake Bot API and
 * the fake model, killed with SIGKILL and started again on the same PINCER_HOME.
 */

const main = join(packageRoot(), "dist/src/cli/main.js");
const USER = 42;
const SCHEDULER_PREFIX = "[system: scheduler]";

let model: FakeOpenAI;
let telegram: FakeTelegram;
const children: ChildProcess[] = [];

beforeAll(async () => {
  model = await startFakeOpenAI();
});
afterAll(() => model.close());
beforeEach(async () => {
  telegram = await startFakeTelegram();
  model.requests.length = 0;
});
afterEach(async () => {
  for (const child of children.splice(0)) await killHard(child);
  await telegram.close();
});

/** Starts `pincer gateway` as a user would, with the environment pointing at the fakes. */
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
      PINCER_TIMEZONE: "Europe/Berlin",
      TELEGRAM_BOT_TOKEN: telegram.token,
      TELEGRAM_API_ROOT: telegram.apiRoot,
      TELEGRAM_ALLOW_FROM: String(USER),
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

/**
 * The model: a user's request becomes a cron add for `secondsAhead` from now, a tool result is
 * confirmed, and a scheduled run is answered by `onRun` (default: the reminder itself).
 */
function scriptModel(secondsAhead: number, onRun: (text: string) => FakeReply | Promise<FakeReply>) {
  model.respond((request) => {
    const last = request.messages.at(-1);
    const text = String(last?.content ?? "");
    if (last?.role === "tool") return { content: `Okay. ${text.split("\n")[1] ?? text}` };
    if (text.startsWith(SCHEDULER_PREFIX)) return onRun(text);
    const at = new Date(Date.now() + secondsAhead * 1000).toISOString();
    return { toolCalls: [{ name: "cron", arguments: { action: "add", message: "take the pizza out", at } }] };
  });
}

const reminders = () => telegram.sent.filter((m) => m.text.includes("PIZZA TIME"));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitForSent(check: (m: SentMessage) => boolean, child: { output: string[] }, timeoutMs = 15_000) {
  try {
    return await telegram.waitFor(() => telegram.sent.find(check), timeoutMs);
  } catch (err) {
    throw new Error(`${(err as Error).message}\n--- daemon output ---\n${child.output.join("")}`);
  }
}

describe("reminders on Telegram across kill -9", () => {
  it("a reminder set in a chat arrives in that chat at its time, exactly once, though pincer was killed in between", async () => {
    const home = tempHome();
    scriptModel(4, () => ({ content: "PIZZA TIME: take the pizza out" }));
    const first = gateway(home);
    say("remind me in 4 seconds to take the pizza out");
    const confirmation = await waitForSent((m) => m.text.startsWith("Okay."), first);
    expect(confirmation.chatId).toBe(String(USER));
    expect(confirmation.text).toMatch(
      /Next run: \w{3} \d{4}-\d{2}-\d{2} \d{2}:\d{2}(:\d{2})? Europe\/Berlin \(UTC\+0[12]:00\)/,
    );
    const dueAt = Date.now() + 4000;

    await killHard(first);
    await sleep(Math.max(0, dueAt - Date.now() + 1000)); // the reminder comes due while pincer is dead

    const second = gateway(home);
    const reminder = await waitForSent((m) => m.text.includes("PIZZA TIME"), second);
    expect(reminder.chatId).toBe(String(USER));
    expect(reminder.at).toBeGreaterThanOrEqual(dueAt - 1000);
    await sleep(2000);
    expect(reminders()).toHaveLength(1);
    const runs = model.requests.filter((r) => String(r.messages.at(-1)?.content).startsWith(SCHEDULER_PREFIX));
    expect(runs).toHaveLength(1);
    // The user's request was handled once, though the restart may have seen its update again.
    const asks = model.requests.filter((r) => String(r.messages.at(-1)?.content).includes("remind me in 4 seconds"));
    expect(asks).toHaveLength(1);
    const db = openDatabase(databasePath(home));
    try {
      expect(listJobsText(db)).toBe("No scheduled jobs.");
    } finally {
      db.close();
    }
  });

  it("a run cut short by kill -9 mid-turn is delivered after the restart, once", async () => {
    const home = tempHome();
    let runStarted: () => void = () => {};
    const started = new Promise<void>((resolve) => {
      runStarted = resolve;
    });
    // The first time the run reaches the model, the model is slow: pincer is killed meanwhile.
    let runs = 0;
    scriptModel(2, () => {
      runs++;
      if (runs === 1) {
        runStarted();
        return { content: "PIZZA TIME (too late, pincer is dead)", delayMs: 3000 };
      }
      return { content: "PIZZA TIME: take the pizza out" };
    });
    const first = gateway(home);
    say("remind me in 2 seconds to take the pizza out");
    await waitForSent((m) => m.text.startsWith("Okay."), first);
    await started;
    await killHard(first);

    const second = gateway(home);
    const reminder = await waitForSent((m) => m.text.includes("PIZZA TIME"), second);
    expect(reminder.text).toBe("PIZZA TIME: take the pizza out");
    expect(reminder.chatId).toBe(String(USER));
    await sleep(3500); // longer than the slow answer the dead process was waiting for
    expect(reminders()).toHaveLength(1);
    expect(runs).toBe(2);
  });
});
