import { afterEach, describe, expect, it } from "vitest";
import type { FakeUser } from "./fakes/discord-server.js";
import type { ChatRequest } from "./fakes/openai-server.js";
import { startDiscordHarness } from "./helpers/discord.js";
import {
  groupChat,
  message,
  privateChat,
  startTelegramHarness,
  type TelegramHarness,
  user,
} from "./helpers/telegram.js";

/** The message tool's buttons end to end: the model offers them, a user taps, the model hears it. */

let h: TelegramHarness | undefined;
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  await h?.close();
  h = undefined;
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const ADA = user(42, "Ada");
const STRANGER = user(7, "Mallory");

const lastUser = (request: ChatRequest) => String(request.messages.filter((m) => m.role === "user").at(-1)?.content);
const toolResults = (requests: ChatRequest[]) => [
  ...new Set(requests.flatMap((r) => r.messages.filter((m) => m.role === "tool").map((m) => String(m.content)))),
];

/** The model calls message with buttons, then answers whatever comes next with what it was told. */
function offerButtons(model: TelegramHarness["model"], buttons: unknown) {
  model.enqueue(
    { toolCalls: [{ name: "message", arguments: { content: "Pick one", buttons }, id: "call_b" }] },
    { content: "asked" },
  );
  model.respond((req) => ({ content: `heard: ${lastUser(req).split("\n").at(-1)}` }));
}

describe("message tool buttons on Telegram", () => {
  it("shows the keyboard; a tap comes back as [button] Label from the tapper, once however often it is replayed", async () => {
    h = await startTelegramHarness();
    offerButtons(h.model, [["Yes 👍", "No"], ["<b>Maybe</b>"]]);
    h.telegram.pushUpdate(message(privateChat(42), ADA, { text: "ask me" }));
    const offered = await h.telegram.waitFor(() => h?.telegram.sent.find((m) => m.text === "Pick one"));
    expect(offered.keyboard?.map((row) => row.map((b) => b.text))).toEqual([["Yes 👍", "No"], ["<b>Maybe</b>"]]);
    await h.telegram.waitFor(() => h?.telegram.sent.find((m) => m.text === "asked"));

    const id = h.telegram.tap(offered, "Yes 👍", ADA);
    h.telegram.tap(offered, "Yes 👍", ADA, { id }); // the same callback query again (a replayed update)
    const heard = await h.telegram.waitFor(() => h?.telegram.sent.find((m) => m.text.startsWith("heard:")));
    expect(heard.text).toBe("heard: [button] Yes 👍");
    expect(heard.replyToId).toBeUndefined();
    expect(h.telegram.answers.get(id)).toEqual({ text: undefined });
    await h.telegram.waitFor(() => h?.telegram.pendingUpdates() === 0);
    h.telegram.tap(offered, "<b>Maybe</b>", ADA);
    await h.telegram.waitFor(() => h?.telegram.sent.filter((m) => m.text.startsWith("heard:")).length === 2);
    expect(h.telegram.sent.filter((m) => m.text.startsWith("heard:")).map((m) => m.text)).toEqual([
      "heard: [button] Yes 👍",
      "heard: [button] <b>Maybe</b>",
    ]);
    expect(h.model.requests).toHaveLength(4);
  });

  it("refuses a stranger's tap in a group like a stranger's message; the allowed user's tap goes to the group's conversation", async () => {
    h = await startTelegramHarness();
    offerButtons(h.model, [["Go"]]);
    const group = groupChat(-1005);
    h.telegram.pushUpdate(message(group, ADA, { text: "@pincer_test_bot ask us" }));
    const offered = await h.telegram.waitFor(() => h?.telegram.sent.find((m) => m.text === "Pick one"));
    expect(offered.chatId).toBe("-1005");
    await h.telegram.waitFor(() => h?.telegram.sent.find((m) => m.text === "asked"));
    const strangers = h.telegram.tap(offered, "Go", STRANGER);
    await h.telegram.waitFor(() => h?.telegram.answers.has(strangers));
    h.telegram.tap(offered, "Go", ADA);
    const heard = await h.telegram.waitFor(() => h?.telegram.sent.find((m) => m.text.startsWith("heard:")));
    expect(heard).toMatchObject({ chatId: "-1005", text: "heard: [button] Go" });
    expect(h.model.requests).toHaveLength(3);
    expect(h.logs.some((l) => l.msg.startsWith("message from a user who is not allowed") && l.userId === "7")).toBe(
      true,
    );
    expect(await h.app.store.conversations.count("telegram:7")).toBe(0);
  });

  it("takes no tap on a message without that button, or with data of no one's, as anything said", async () => {
    h = await startTelegramHarness();
    const chat = privateChat(42);
    const forged = (id: string, data: string) =>
      h?.telegram.pushUpdate({
        callback_query: {
          id,
          from: ADA,
          chat_instance: "ci",
          data,
          message: { message_id: 999, date: 1, chat, text: "not mine" } as never,
        },
      });
    forged("f1", "b:0.0");
    forged("f2", "zz:what");
    await h.telegram.waitFor(() => h?.telegram.answers.size === 2);
    expect(h.telegram.answers.get("f1")).toEqual({ text: "This button has expired." });
    expect(h.telegram.answers.get("f2")).toEqual({ text: "This button has expired." });
    expect(h.model.requests).toHaveLength(0);
  });

  it("refuses bad buttons with a clear Error: and sends nothing", async () => {
    h = await startTelegramHarness();
    for (const buttons of [
      [["   "]],
      [["a".repeat(65)]],
      [["x"], ["x"]],
      Array.from({ length: 6 }, (_, i) => [`r${i}`]),
      [[]],
    ]) {
      h.model.enqueue(
        { toolCalls: [{ name: "message", arguments: { content: "Pick", buttons }, id: "call_bad" }] },
        { content: "ok" },
      );
    }
    for (let i = 0; i < 5; i++) {
      h.telegram.pushUpdate(message(privateChat(42), ADA, { text: `try ${i}` }));
      await h.telegram.waitFor(() => h?.telegram.sent.filter((m) => m.text === "ok").length === i + 1);
    }
    const results = toolResults(h.model.requests);
    expect(results).toHaveLength(5);
    for (const result of results) expect(result).toMatch(/^Error: /);
    expect(results[0]).toContain("empty");
    expect(results[2]).toContain("used twice");
    expect(h.telegram.sent.some((m) => m.text === "Pick")).toBe(false);
  });
});

describe("message tool buttons on Discord", () => {
  it("shows the buttons; a tap comes back as [button] Label from the tapper and is answered in time", async () => {
    const DM = "140000000000000001";
    const ALICE: FakeUser = { id: "200000000000000001", username: "alice" };
    const { discord, model } = await startDiscordHarness(cleanups, { allowFrom: ALICE.id });
    offerButtons(model, [["Ship it", "Wait"]]);
    discord.dispatchMessage({ channelId: DM, author: ALICE, content: "ask me" });
    const offered = await discord.waitFor(() => discord.sent.find((m) => m.content === "Pick one"));
    await discord.waitFor(() => discord.sent.find((m) => m.content === "asked"));
    const tap = discord.tap(offered, "Ship it", ALICE);
    const heard = await discord.waitFor(() => discord.sent.find((m) => m.content.startsWith("heard:")));
    expect(heard.content).toBe("heard: [button] Ship it");
    expect(heard.replyTo).toBeUndefined();
    expect(discord.interactions.get(tap)).toMatchObject({ type: 6 });
    expect(model.requests).toHaveLength(3);

    // The gateway session resumed with everything replayed, the interaction too: taken once.
    discord.dropConnection({ replayAfterSeq: 0 });
    await discord.waitFor(
      () => discord.gateway.filter((g) => g.op === 6).length === 1 && discord.liveConnections === 1,
    );
    await discord.waitFor(() =>
      discord.calls.some((c) => c.path.startsWith(`/interactions/${tap}/`) && c.status === 400),
    );
    discord.dispatchMessage({ channelId: DM, author: ALICE, content: "and now?" });
    await discord.waitFor(() => discord.sent.find((m) => m.content === "heard: and now?"));
    expect(discord.sent.filter((m) => m.content.startsWith("heard:")).map((m) => m.content)).toEqual([
      "heard: [button] Ship it",
      "heard: and now?",
    ]);
  });
});
