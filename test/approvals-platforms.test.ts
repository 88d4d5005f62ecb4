/**
 * Approvals on the platforms: the real grammy and discord.js clients against the fake Bot API and
 * the fake Discord, taps as callback queries and interactions, prompts edited with their buttons gone.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { FakeUser } from "./fakes/discord-server.js";
import type { FakeOpenAI } from "./fakes/openai-server.js";
import { startDiscordHarness } from "./helpers/discord.js";
import {
  groupChat,
  message,
  privateChat,
  startTelegramHarness,
  type TelegramHarness,
  user,
} from "./helpers/telegram.js";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The model runs `command`, then answers with what the tool said. */
function modelRuns(model: FakeOpenAI, command: string) {
  model.respond((request) => {
    const last = request.messages.at(-1);
    if (last?.role === "tool") return { content: `tool said: ${last.content}` };
    return { toolCalls: [{ name: "exec", arguments: { command } }] };
  });
}

async function telegram(): Promise<TelegramHarness> {
  const h = await startTelegramHarness({
    allowFrom: "42,43",
    adjust: (config) => {
      config.approvals.exec = "ask";
    },
  });
  cleanups.push(() => h.close());
  return h;
}

describe("approvals on Telegram (grammy)", () => {
  it("Allow once: the tap is answered, the command runs, the prompt is edited and its keyboard removed", async () => {
    const h = await telegram();
    modelRuns(h.model, "echo on-telegram");
    h.telegram.pushUpdate(message(privateChat(42), user(42, "Ada"), { text: "run it" }));
    const prompt = await h.telegram.waitFor(() => h.telegram.sent.find((m) => m.keyboard?.length));
    expect(prompt.chatId).toBe("42");
    expect(prompt.text).toContain("echo on-telegram");
    expect(prompt.keyboard?.[0]?.map((b) => b.text)).toEqual(["Allow once", "Always allow", "Deny"]);
    const keyboard = prompt.keyboard;
    const tap = h.telegram.tap(prompt, "Allow once", user(42, "Ada"));
    await h.telegram.waitFor(() => h.telegram.answers.get(tap));
    expect(h.telegram.answers.get(tap)).toEqual({ text: "Allowed once." });
    await h.telegram.waitFor(() => h.telegram.sent.find((m) => m.text === "tool said: on-telegram"));
    await h.telegram.waitFor(() => prompt.edits?.length);
    expect(prompt.edits?.[0]).toContain("Allowed once by Ada");
    expect(prompt.keyboard ?? []).toEqual([]);
    // A late tap from a device still showing the old keyboard changes nothing.
    const late = h.telegram.tap({ ...prompt, keyboard }, "Deny", user(42, "Ada"));
    await h.telegram.waitFor(() => h.telegram.answers.get(late));
    expect(h.telegram.answers.get(late)).toEqual({ text: "Already allowed." });
    expect(prompt.edits).toHaveLength(1);
  });

  it("in a group: a stranger's tap is not theirs; a double tap by the owner decides once; Deny reaches the model", async () => {
    const h = await telegram();
    modelRuns(h.model, "touch group-file");
    const group = groupChat(-1009);
    h.telegram.pushUpdate(message(group, user(42, "Ada"), { text: "@pincer_test_bot run it" }));
    const prompt = await h.telegram.waitFor(() => h.telegram.sent.find((m) => m.keyboard?.length));
    expect(prompt.chatId).toBe("-1009");
    const stranger = h.telegram.tap(prompt, "Allow once", user(43, "Bob"));
    await h.telegram.waitFor(() => h.telegram.answers.get(stranger));
    expect(h.telegram.answers.get(stranger)).toEqual({ text: "This is not yours to decide." });
    const first = h.telegram.tap(prompt, "Deny", user(42, "Ada"));
    const second = h.telegram.tap(prompt, "Allow once", user(42, "Ada"));
    await h.telegram.waitFor(() => h.telegram.answers.get(first) && h.telegram.answers.get(second));
    expect([h.telegram.answers.get(first)?.text, h.telegram.answers.get(second)?.text].sort()).toEqual([
      "Already denied.",
      "Denied.",
    ]);
    const answer = await h.telegram.waitFor(() => h.telegram.sent.find((m) => m.text.startsWith("tool said:")));
    expect(answer.text).toContain("denied by the user");
    await h.telegram.waitFor(() => prompt.edits?.length);
    expect(prompt.edits).toHaveLength(1);
    expect(prompt.edits?.[0]).toContain("Denied by Ada");
  });
});

const GUILD = "110000000000000001";
const GENERAL = "120000000000000001";
const ALICE: FakeUser = { id: "200000000000000001", username: "alice" };
const MALLORY: FakeUser = { id: "200000000000000002", username: "mallory" };

describe("approvals on Discord (discord.js)", () => {
  it("buttons under the prompt; a stranger is refused, Always allow runs it and later turns run unasked", async () => {
    const h = await startDiscordHarness(cleanups, {
      allowFrom: `${ALICE.id},${MALLORY.id}`,
      fake: { guilds: [{ id: GUILD, name: "home", channels: [{ id: GENERAL, name: "general" }] }] },
      adjust: (config) => {
        config.approvals.exec = "ask";
      },
    });
    modelRuns(h.model, "echo on-discord");
    h.discord.dispatchMessage({ channelId: GENERAL, guildId: GUILD, author: ALICE, content: `${h.mention} run it` });
    const prompt = await h.discord.waitFor(() => h.discord.sent.find((m) => m.components?.length));
    expect(prompt.channelId).toBe(GENERAL);
    expect(prompt.content).toContain("echo on-discord");
    expect(prompt.components?.[0]?.components.map((b) => b.label)).toEqual(["Allow once", "Always allow", "Deny"]);
    const stranger = h.discord.tap(prompt, "Allow once", MALLORY);
    await h.discord.waitFor(() => h.discord.interactions.get(stranger));
    expect(h.discord.interactions.get(stranger)).toMatchObject({ content: "This is not yours to decide.", flags: 64 });
    const tap = h.discord.tap(prompt, "Always allow", ALICE);
    await h.discord.waitFor(() => h.discord.interactions.get(tap));
    expect(h.discord.interactions.get(tap)).toMatchObject({ content: "Always allowed here.", flags: 64 });
    await h.discord.waitFor(() => h.discord.sent.find((m) => m.content === "tool said: on-discord"));
    await h.discord.waitFor(() => prompt.edits?.length);
    expect(prompt.edits?.[0]).toContain("Always allowed here by alice");
    expect(prompt.components ?? []).toEqual([]);
    h.discord.dispatchMessage({ channelId: GENERAL, guildId: GUILD, author: ALICE, content: `${h.mention} again` });
    await h.discord.waitFor(() => h.discord.sent.filter((m) => m.content === "tool said: on-discord").length === 2);
    expect(h.discord.sent.filter((m) => m.components?.length)).toHaveLength(0);
  });
});
