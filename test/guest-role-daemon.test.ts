/**
 * Issue 36, point 6: a guest (let in by pairing) neither switches nor lists the owner's group's model, and sees only
 * their own usage; the owner (named in TELEGRAM_ALLOW_FROM) keeps both. The built `pincer gateway` with the real
 * grammy against the fake Bot API and the fake model, the pairing approved with the built CLI.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { ChatRequest } from "./fakes/openai-server.js";
import { gatewayOnFakes, pincer, USER } from "./helpers/daemon.js";

const fakes = gatewayOnFakes();
const { model, until } = fakes;
const GROUP = -100555;
const GUEST = 77;

function inGroup(text: string, from: number): void {
  fakes.telegram.pushUpdate({
    message: {
      message_id: 0,
      date: 0,
      chat: { id: GROUP, type: "supergroup", title: "Team" },
      from: { id: from, is_bot: false, first_name: from === USER ? "Ada" : "Bob" },
      text,
    },
  });
}

const lastText = (r: ChatRequest) => String(r.messages.findLast((m) => m.role === "user")?.content ?? "");
const sentTo = (chat: number, starts: string, after = 0) =>
  until(
    () => fakes.telegram.sent.slice(after).find((m) => m.chatId === String(chat) && m.text.startsWith(starts)),
    `"${starts}" in ${chat}`,
    30_000,
  );

describe("the guest role on the built daemon", () => {
  it("a paired guest has no /model in the owner's group and sees only their own /usage; the owner has both", async () => {
    const home = fakes.home("pincer-guest-");
    writeFileSync(join(home, "config.json"), JSON.stringify({ agent: { models: [{ name: "o1-pro" }] } }));
    // The owner's calls are big, the guest's small: the guest's report must not add up the owner's.
    model.respond((request) => {
      const guest = lastText(request).includes("guest");
      return {
        content: `${request.model} answers`,
        usage: guest ? { prompt_tokens: 7, completion_tokens: 3 } : { prompt_tokens: 5000, completion_tokens: 1000 },
      };
    });
    fakes.gateway(home);

    fakes.say("hello", GUEST);
    const codeMessage = await sentTo(GUEST, "Hi! I only talk");
    const code = /pairing code is ([A-Z0-9]{8})/.exec(codeMessage.text)?.[1] as string;
    expect((await pincer(["pairing", "approve", "telegram", code], home)).code).toBe(0);

    fakes.say("hi from the guest", GUEST);
    await sentTo(GUEST, "gpt-4.1-mini answers");
    fakes.say("hi from the owner");
    await sentTo(USER, "gpt-4.1-mini answers");

    // The guest in the owner's group: no switch, no list.
    inGroup("/model o1-pro", GUEST);
    expect((await sentTo(GROUP, "Only the owner")).text).toContain("TELEGRAM_ALLOW_FROM");
    const before = fakes.telegram.sent.length;
    inGroup("/model", GUEST);
    expect((await sentTo(GROUP, "Only the owner", before)).text).not.toContain("o1-pro");
    model.requests.length = 0;
    inGroup("@pincer_test_bot owner here", USER);
    await sentTo(GROUP, "gpt-4.1-mini answers");
    expect(model.requests.map((r) => r.model)).toEqual(["gpt-4.1-mini"]);

    // The guest's /usage: their 10 tokens, today and this month, nothing of the owner's 6,000 or anyone's totals.
    fakes.say("/usage", GUEST);
    const theirs = await sentTo(GUEST, "Model usage");
    expect(theirs.text).toMatch(/, yours: 10 tokens/);
    expect(theirs.text).not.toMatch(/all chats|this chat|6,0\d\d/);

    // The owner's /usage: this chat and all chats; and the owner may switch the group.
    fakes.say("/usage");
    const owners = await sentTo(USER, "Model usage");
    expect(owners.text).toMatch(/Today, all chats: 12,010 tokens/);
    inGroup("/model o1-pro", USER);
    await sentTo(GROUP, "This chat uses o1-pro");
  }, 90_000);
});
