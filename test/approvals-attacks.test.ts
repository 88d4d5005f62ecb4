/**
 * Approvals attacked as an outsider would (issue 25): forged and junk callback data, taps with no
 * message or from chats pincer never wrote to, a Discord interaction from another guild, commands
 * whose prompt would show something other than what runs. Real grammy and discord.js against the fakes.
 */
import type { Message } from "grammy/types";
import { afterEach, describe, expect, it } from "vitest";
import type { FakeUser } from "./fakes/discord-server.js";
import type { FakeOpenAI } from "./fakes/openai-server.js";
import { startDiscordHarness } from "./helpers/discord.js";
import { groupChat, message, privateChat, startTelegramHarness, user } from "./helpers/telegram.js";

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

async function telegram() {
  const h = await startTelegramHarness({
    allowFrom: "42,43",
    adjust: (config) => {
      config.approvals.exec = "ask";
    },
  });
  cleanups.push(() => h.close());
  return h;
}

describe("approvals on Telegram under attack", () => {
  it("forged, junk and message-less callback queries are answered and decide nothing; the real tap still works", async () => {
    const h = await telegram();
    modelRuns(h.model, "echo still-asked");
    h.telegram.pushUpdate(message(privateChat(42), user(42, "Ada"), { text: "run it" }));
    const prompt = await h.telegram.waitFor(() => h.telegram.sent.find((m) => m.keyboard?.length));
    const real = prompt.keyboard?.[0]?.[0];
    const data = real && "callback_data" in real ? real.callback_data : "";
    expect(data).toMatch(/^a:[\w-]+:once$/);
    const elsewhere = { message_id: 1, date: Math.floor(Date.now() / 1000), text: "hi" };
    const queries = [
      // Inline mode: no message, only an inline_message_id, with the prompt's own data.
      { id: "q-inline", from: user(42, "Ada"), chat_instance: "ci", inline_message_id: "inl-1", data },
      // The right user, a chat pincer never wrote to, the prompt's data.
      {
        id: "q-other-chat",
        from: user(42, "Ada"),
        chat_instance: "ci",
        message: { ...elsewhere, chat: groupChat(-100777) } as Message,
        data,
      },
      ...["a:", "a:x", `a:${data.slice(2, -5)}:yes`, `a:${"A".repeat(60)}:once`, "a:../../etc:deny", "zz", ""].map(
        (junk, i) => ({
          id: `q-junk-${i}`,
          from: user(42, "Ada"),
          chat_instance: "ci",
          message: { ...elsewhere, message_id: prompt.messageId, chat: privateChat(42) } as Message,
          data: junk,
        }),
      ),
    ];
    for (const callback_query of queries) h.telegram.pushUpdate({ callback_query });
    await h.telegram.waitFor(() => queries.every((q) => h.telegram.answers.has(q.id)));
    expect(h.telegram.answers.get("q-inline")).toEqual({});
    expect(h.telegram.answers.get("q-other-chat")).toEqual({ text: "This is not yours to decide." });
    for (const q of queries.slice(2))
      expect(h.telegram.answers.get(q.id), q.data).toEqual({ text: expect.stringMatching(/expired/) });
    expect(h.telegram.sent.some((m) => m.text.startsWith("tool said:"))).toBe(false);
    expect(await h.app.store.approvals.pending()).toHaveLength(1);
    const tap = h.telegram.tap(prompt, "Allow once", user(42, "Ada"));
    await h.telegram.waitFor(() => h.telegram.sent.find((m) => m.text === "tool said: still-asked"));
    expect(h.telegram.answers.get(tap)).toEqual({ text: "Allowed once." });
  });

  it("HTML and Markdown in a command are shown as text, and a command with a bidi override shows its code point", async () => {
    const h = await telegram();
    const command = "echo '</pre><b>safe</b> **x** _y_ [a](http://e) &amp;' # \u202Etxt.exe";
    modelRuns(h.model, command);
    h.telegram.pushUpdate(message(privateChat(42), user(42, "Ada"), { text: "run it" }));
    const prompt = await h.telegram.waitFor(() => h.telegram.sent.find((m) => m.keyboard?.length));
    expect(prompt.parseMode).toBe("HTML");
    // The fake parses the HTML as Telegram does: what the user reads is the command, character for character.
    expect(prompt.text).toContain("echo '</pre><b>safe</b> **x** _y_ [a](http://e) &amp;' # <U+202E>txt.exe");
    h.telegram.tap(prompt, "Deny", user(42, "Ada"));
    await h.telegram.waitFor(() => prompt.edits?.length);
    expect(prompt.edits?.[0]).toContain("</pre><b>safe</b>");
  });

  it("a command too long to show (4,096+ characters) is not put to the user at all; the model is told", async () => {
    const h = await telegram();
    modelRuns(h.model, `echo ${"x".repeat(4100)}`);
    h.telegram.pushUpdate(message(privateChat(42), user(42, "Ada"), { text: "run it" }));
    const answer = await h.telegram.waitFor(() => h.telegram.sent.find((m) => m.text.startsWith("tool said:")));
    expect(answer.text).toContain("too long to show for approval");
    expect(h.telegram.sent.filter((m) => m.keyboard?.length)).toHaveLength(0);
  });
});

const GUILD = "110000000000000001";
const GENERAL = "120000000000000001";
const OTHER_GUILD = "110000000000000002";
const OTHER = "120000000000000002";
const ALICE: FakeUser = { id: "200000000000000001", username: "alice" };

describe("approvals on Discord under attack", () => {
  it("an interaction for the prompt's buttons arriving from another guild's channel decides nothing", async () => {
    const h = await startDiscordHarness(cleanups, {
      allowFrom: ALICE.id,
      fake: {
        guilds: [
          { id: GUILD, name: "home", channels: [{ id: GENERAL, name: "general" }] },
          { id: OTHER_GUILD, name: "elsewhere", channels: [{ id: OTHER, name: "general" }] },
        ],
      },
      adjust: (config) => {
        config.approvals.exec = "ask";
      },
    });
    modelRuns(h.model, "echo on-discord");
    h.discord.dispatchMessage({ channelId: GENERAL, guildId: GUILD, author: ALICE, content: `${h.mention} run it` });
    const prompt = await h.discord.waitFor(() => h.discord.sent.find((m) => m.components?.length));
    const forged = h.discord.tap({ ...prompt, channelId: OTHER }, "Allow once", ALICE);
    await h.discord.waitFor(() => h.discord.interactions.get(forged));
    expect(h.discord.interactions.get(forged)).toMatchObject({ content: "This is not yours to decide.", flags: 64 });
    expect(await h.app.store.approvals.pending()).toHaveLength(1);
    const tap = h.discord.tap(prompt, "Allow once", ALICE);
    await h.discord.waitFor(() => h.discord.sent.find((m) => m.content === "tool said: on-discord"));
    expect(h.discord.interactions.get(tap)).toMatchObject({ content: "Allowed once." });
  });
});
