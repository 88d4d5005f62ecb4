import { describe, expect, it } from "vitest";
import { databasePath } from "../src/paths.js";
import { listJobsText } from "../src/scheduler/cron-commands.js";
import { openDatabase } from "../src/store/sqlite/database.js";
import { openSqliteStore } from "../src/store/sqlite/sqlite-store.js";
import type { FakeReply } from "./fakes/openai-server.js";
import type { SentMessage } from "./fakes/telegram-server.js";
import { tempHome } from "./helpers/app.js";
import { atRest, gatewayOnFakes, killHard, USER } from "./helpers/daemon.js";

/**
 * The done-when of reminders: the built daemon (`pincer gateway`) talking to the fake Bot API and
 * the fake model, killed with SIGKILL and started again on the same PINCER_HOME.
 */

const SCHEDULER_PREFIX = "[system: scheduler]";
const fakes = gatewayOnFakes({ PINCER_TIMEZONE: "Europe/Berlin" });
const { model, gateway, say, until } = fakes;

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

const reminders = () => fakes.telegram.sent.filter((m) => m.text.includes("PIZZA TIME"));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const waitForSent = (check: (m: SentMessage) => boolean, what: string) =>
  until(() => fakes.telegram.sent.find(check), what);

describe("reminders on Telegram across kill -9", () => {
  it("a reminder set in a chat arrives in that chat at its time, exactly once, though pincer was killed in between", async () => {
    const home = tempHome();
    scriptModel(4, () => ({ content: "PIZZA TIME: take the pizza out" }));
    const first = gateway(home);
    say("remind me in 4 seconds to take the pizza out");
    const confirmation = await waitForSent((m) => m.text.startsWith("Okay."), "the confirmation");
    expect(confirmation.chatId).toBe(String(USER));
    expect(confirmation.text).toMatch(
      /Next run: \w{3} \d{4}-\d{2}-\d{2} \d{2}:\d{2}(:\d{2})? Europe\/Berlin \(UTC\+0[12]:00\)/,
    );
    const dueAt = Date.now() + 4000;

    await killHard(first);
    // The reminder comes due while pincer is dead: time itself is the input, with no process to watch.
    await sleep(Math.max(0, dueAt - Date.now() + 1000));

    gateway(home);
    const reminder = await waitForSent((m) => m.text.includes("PIZZA TIME"), "the reminder");
    expect(reminder.chatId).toBe(String(USER));
    expect(reminder.at).toBeGreaterThanOrEqual(dueAt - 1000);
    await until(() => atRest(home), "nothing left to run or send");
    expect(reminders()).toHaveLength(1);
    const runs = model.requests.filter((r) => String(r.messages.at(-1)?.content).startsWith(SCHEDULER_PREFIX));
    expect(runs).toHaveLength(1);
    // The user's request was handled once, though the restart may have seen its update again.
    const asks = model.requests.filter((r) => String(r.messages.at(-1)?.content).includes("remind me in 4 seconds"));
    expect(asks).toHaveLength(1);
    const db = openDatabase(databasePath(home));
    try {
      expect(await listJobsText(openSqliteStore(db).jobs)).toBe("No scheduled jobs.");
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
    await waitForSent((m) => m.text.startsWith("Okay."), "the confirmation");
    await started;
    await killHard(first);

    gateway(home);
    const reminder = await waitForSent((m) => m.text.includes("PIZZA TIME"), "the reminder");
    expect(reminder.text).toBe("PIZZA TIME: take the pizza out");
    expect(reminder.chatId).toBe(String(USER));
    // The dead process's slow answer can reach nobody; what could repeat the reminder is a run or a job left over.
    await until(() => atRest(home), "nothing left to run or send");
    expect(reminders()).toHaveLength(1);
    expect(runs).toBe(2);
  });
});
