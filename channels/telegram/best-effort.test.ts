/**
 * Typing and command registration are best effort: one try each, one log line with Telegram's
 * own description, and nothing still being retried once the reply has gone out.
 */
import { afterEach, describe, expect, it } from "vitest";
import { message, privateChat, startTelegramHarness, type TelegramHarness, user } from "../../test/helpers/telegram.js";

let h: TelegramHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("telegram best-effort calls", () => {
  it("tries setMyCommands once and logs Telegram's description", async () => {
    h = await startTelegramHarness({
      beforeStart: (telegram) => telegram.failNext("setMyCommands", { status: 500 }, 5),
    });
    const line = await h.telegram.waitFor(() => h?.logs.find((l) => l.msg === "could not register the bot's commands"));
    expect(line.err).toBe("500 Internal Server Error");
    expect(h.telegram.callsTo("setMyCommands")).toHaveLength(1);
  });

  it("does not retry a failed typing action", async () => {
    h = await startTelegramHarness();
    h.telegram.failNext("sendChatAction", { status: 500 }, 1000);
    h.model.enqueue({ content: "done", delayMs: 450 });
    h.telegram.pushUpdate(message(privateChat(42), user(42), { text: "slow question" }));
    await h.telegram.waitFor(() => h?.telegram.sent[0]);
    const failures = () => h?.logs.filter((l) => l.msg === "could not send the typing indicator").length ?? 0;
    await h.telegram.waitFor(() => failures() >= 3);
    // Every call is answered by exactly one failure line: none was tried again. One may be in flight.
    expect(h.telegram.callsTo("sendChatAction").length).toBeLessThanOrEqual(failures() + 1);
  });
});
