import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "./fakes/openai-server.js";
import { type FakeTelegram, startFakeTelegram } from "./fakes/telegram-server.js";
import { tempHome } from "./helpers/app.js";
import { type Daemon, killHard, pincer, startDaemon, until } from "./helpers/daemon.js";

/**
 * Access and crash safety of the built daemon (`pincer gateway`), talking to the fake Bot API
 * and the fake model, killed with SIGKILL and started again on the same PINCER_HOME.
 */

let model: FakeOpenAI;
let telegram: FakeTelegram;
const daemons: Daemon[] = [];

beforeAll(async () => {
  model = await startFakeOpenAI();
});
afterAll(() => model.close());
beforeEach(async () => {
  telegram = await startFakeTelegram();
  model.requests.length = 0;
});
afterEach(async () => {
  for (const daemon of daemons.splice(0)) await killHard(daemon);
  await telegram.close();
});

function gateway(home: string, allowFrom: string): Daemon {
  const daemon = startDaemon(home, {
    OPENAI_API_KEY: "test",
    OPENAI_BASE_URL: model.url,
    PINCER_SANDBOX: "none",
    PINCER_TIMEZONE: "UTC",
    TELEGRAM_BOT_TOKEN: telegram.token,
    TELEGRAM_API_ROOT: telegram.apiRoot,
    TELEGRAM_ALLOW_FROM: allowFrom,
  });
  daemons.push(daemon);
  return daemon;
}

function say(userId: number, text: string): void {
  telegram.pushUpdate({
    message: {
      message_id: 0,
      date: 0,
      chat: { id: userId, type: "private", first_name: "Ada" },
      from: { id: userId, is_bot: false, first_name: "Ada" },
      text,
    },
  });
}

const lastText = (r: FakeOpenAI["requests"][number]) => String(r.messages.at(-1)?.content ?? "");
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("the daemon under attack", () => {
  it("sets aside a message whose turn killed pincer twice, with one notice, and keeps answering", async () => {
    const home = tempHome();
    // The "poison" turn never ends: the daemon is killed during it (as if the turn had crashed it).
    model.respond((request) =>
      lastText(request).includes("poison") ? new Promise(() => {}) : { content: `re: ${lastText(request)}` },
    );
    const poisonRequests = () => model.requests.filter((r) => lastText(r).includes("poison")).length;

    const first = gateway(home, "42");
    say(42, "poison");
    await until(() => poisonRequests() === 1, first, "the first turn");
    await killHard(first);

    const second = gateway(home, "42");
    await until(() => poisonRequests() === 2, second, "the second turn (resumed after the crash)");
    await killHard(second);

    const third = gateway(home, "42");
    const notice = await until(
      () => telegram.sent.find((m) => m.text.includes("set your message aside")),
      third,
      "the notice",
    );
    expect(notice.chatId).toBe("42");
    say(42, "hello again");
    await until(() => telegram.sent.find((m) => m.text === "re: hello again"), third, "the next answer");
    expect(poisonRequests()).toBe(2);
    await killHard(third);

    // Once set aside, it stays aside: no third run and no second notice after another restart.
    const fourth = gateway(home, "42");
    say(42, "still there?");
    await until(() => telegram.sent.find((m) => m.text === "re: still there?"), fourth, "an answer after restart");
    expect(poisonRequests()).toBe(2);
    expect(telegram.sent.filter((m) => m.text.includes("set your message aside"))).toHaveLength(1);
  });

  it("revoke takes a paired user's access away and pauses their reminder, which then never runs", async () => {
    const home = tempHome();
    model.respond((request) => {
      const last = request.messages.at(-1);
      if (last?.role === "tool") return { content: `Okay. ${String(last.content).split("\n")[1] ?? ""}` };
      if (lastText(request).startsWith("[system: scheduler]")) return { content: "REMINDER: water the plants" };
      const at = new Date(Date.now() + 4000).toISOString();
      return { toolCalls: [{ name: "cron", arguments: { action: "add", message: "water the plants", at } }] };
    });
    const daemon = gateway(home, "");
    say(77, "hi, let me in");
    const codeMessage = await until(() => telegram.sent.find((m) => m.chatId === "77"), daemon, "a pairing code");
    const code = /pairing code is ([A-Z0-9]{8})/.exec(codeMessage.text)?.[1] as string;
    expect(model.requests).toHaveLength(0);

    const approve = await pincer(["pairing", "approve", "telegram", code], home);
    expect(approve.stdout).toContain("Approved Ada (id 77) on telegram.");
    say(77, "remind me in 4 seconds to water the plants");
    const dueBy = Date.now() + 4000;
    await until(() => telegram.sent.find((m) => m.text.startsWith("Okay.")), daemon, "the confirmation");

    const revoke = await pincer(["pairing", "revoke", "telegram", "77"], home);
    expect(revoke.code).toBe(0);
    expect(revoke.stdout).toBe("Revoked the approval of 77 on telegram.\nPaused 1 job they created.\n");
    const list = await pincer(["cron", "list"], home);
    expect(list.stdout).toMatch(/owner: telegram 77\n\s+paused since/);

    // Past the reminder's time: it did not run, and the user is a stranger again (a code, no model call).
    await sleep(Math.max(0, dueBy + 1500 - Date.now()));
    const requestsBefore = model.requests.length;
    say(77, "are you there?");
    await until(() => telegram.sent.filter((m) => m.chatId === "77").length >= 3, daemon, "a second pairing code");
    const latest = telegram.sent.filter((m) => m.chatId === "77").at(-1);
    expect(latest?.text).toMatch(/pairing code is/);
    expect(latest?.text).not.toContain(code);
    expect(model.requests).toHaveLength(requestsBefore);
    expect(model.requests.some((r) => lastText(r).startsWith("[system: scheduler]"))).toBe(false);
    expect(telegram.sent.some((m) => m.text.includes("REMINDER"))).toBe(false);

    const again = await pincer(["pairing", "revoke", "telegram", "77"], home);
    expect(again.code).toBe(1);
    expect(again.stdout).toContain("77 was not an approved user on telegram.");
  });
});
