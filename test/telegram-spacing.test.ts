/**
 * Issue 36, point 9: what a user pastes on Telegram reaches the model with its spaces and tabs, through the real
 * grammy against the fake Bot API, in a direct chat and addressed by @name in a group.
 */
import { afterEach, describe, expect, it } from "vitest";
import { groupChat, message, privateChat, startTelegramHarness, user } from "./helpers/telegram.js";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

const YAML = 'services:\n  web:\n    image: nginx\n    ports:\n      - \'80:80\'\n\tcommand:  ["a",  "b"]';
const PYTHON = "def f(x):\n    if x:\n        return  x  *  2\n    return 0";

describe("Telegram keeps the user's spacing", () => {
  it("pasted YAML and code reach the model exactly, directly and after the bot's @name in a group", async () => {
    const h = await startTelegramHarness({ allowFrom: "42" });
    cleanups.push(() => h.close());
    const seen: string[] = [];
    h.model.respond((request) => {
      seen.push(String(request.messages.findLast((m) => m.role === "user")?.content ?? ""));
      return { content: "ok" };
    });
    h.telegram.pushUpdate(message(privateChat(42), user(42, "Ada"), { text: YAML }));
    await h.telegram.waitFor(() => h.telegram.sent.find((m) => m.chatId === "42"));
    h.telegram.pushUpdate(
      message(groupChat(-100), user(42, "Ada"), { text: `@pincer_test_bot check this:\n${PYTHON}` }),
    );
    await h.telegram.waitFor(() => h.telegram.sent.find((m) => m.chatId === "-100"));
    expect(seen[0].slice(0, YAML.length)).toBe(YAML);
    expect(seen[1]).toContain(`check this:\n${PYTHON}`);
  });
});
