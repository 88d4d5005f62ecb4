import { afterEach, describe, expect, it } from "vitest";
import type { FakeReply } from "./fakes/openai-server.js";
import type { ApiCall } from "./fakes/telegram-server.js";
import {
  groupChat,
  message,
  privateChat,
  startTelegramHarness,
  type TelegramHarness,
  user,
} from "./helpers/telegram.js";
import { until } from "./helpers/until.js";

/** Replies shown as they are written on Telegram: real grammy against the fake Bot API and a slow fake model. */

let h: TelegramHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function streaming(setting: "private" | "all" = "private", progressAfterSeconds?: number) {
  h = await startTelegramHarness({
    adjust: (config) => {
      config.agent.streamReplies = setting;
      if (progressAfterSeconds !== undefined) config.progress.afterSeconds = progressAfterSeconds;
    },
  });
  // An endpoint's first reply after a start is not streamed (it shows whether the template opens <think>): one first.
  const { telegram, model, app } = h;
  model.enqueue({ content: "ready" });
  telegram.pushUpdate(message(privateChat(42), user(42), { text: "hello" }));
  await telegram.waitFor(() => telegram.sent[0]);
  await until(async () => (await app.store.journal.pendingOutbound("telegram")).length === 0, "the first reply out");
  for (const list of [telegram.sent, telegram.drafts, telegram.calls, model.requests]) list.length = 0;
  return h;
}

/** A reply the fake model writes in pieces and holds after `chunks` of them until `release()`. */
function heldReply(content: string, chunks = 4, extra: Partial<FakeReply> = {}) {
  let release = () => {};
  const until = new Promise<void>((resolve) => (release = resolve));
  return { reply: { content, holdAfter: { chunks, until }, ...extra } satisfies FakeReply, release };
}

/** The most calls of `methods` in any window of `ms`. */
function mostIn(calls: ApiCall[], ms: number): number {
  return Math.max(0, ...calls.map((c) => calls.filter((d) => d.at >= c.at && d.at < c.at + ms).length));
}

const ANSWER = "Here is **the plan**: first we look, then we act, and then we look again to be sure.";

describe("streamed replies on Telegram", () => {
  it("shows a private chat's first words as a native draft while the model still writes, then one formatted reply", async () => {
    const { telegram, model } = await streaming();
    const held = heldReply(ANSWER);
    model.enqueue(held.reply);
    const asked = telegram.pushUpdate(message(privateChat(42), user(42), { text: "what is the plan?" }));
    // The model's stream is held after its first chunks: whatever shows now was shown before it finished.
    const first = await telegram.waitFor(() => telegram.drafts.find((d) => d.text.length > 0));
    expect(ANSWER.startsWith(first.text)).toBe(true);
    expect(telegram.sent).toHaveLength(0);
    held.release();
    const reply = await telegram.waitFor(() => telegram.sent[0]);
    expect(reply).toMatchObject({ method: "sendMessage", parseMode: "HTML", replyToId: asked.message?.message_id });
    expect(reply.text).toBe("Here is the plan: first we look, then we act, and then we look again to be sure.");
    // One reply message, and every draft of it under one draft id (Telegram animates one draft).
    await until(async () => (await h?.app.store.journal.pendingOutbound("telegram"))?.length === 0, "the outbox empty");
    expect(telegram.sent).toHaveLength(1);
    expect(new Set(telegram.drafts.map((d) => d.draftId)).size).toBe(1);
    expect(model.requests[0].stream).toBe(true);
  });

  it("without native drafts: one message edited in place at most once a second, settled into the reply", async () => {
    const { telegram, model } = await streaming();
    telegram.failNext("sendMessageDraft", { status: 400, description: "Bad Request: method is not available" });
    const words = Array.from({ length: 60 }, (_, i) => `word${i}`).join(" ");
    model.enqueue({ content: `${words}.`, chunkDelayMs: 40 });
    telegram.pushUpdate(message(privateChat(42), user(42), { text: "talk" }));
    const draft = await telegram.waitFor(() => telegram.sent[0]);
    await telegram.waitFor(() => (draft.edits?.at(-1) ?? draft.text) === `${words}.`, 20_000);
    await until(async () => (await h?.app.store.journal.pendingOutbound("telegram"))?.length === 0, "the outbox empty");
    expect(telegram.sent).toHaveLength(1);
    expect(draft.deleted).toBeFalsy();
    const draftCalls = telegram.calls.filter((c) => ["sendMessage", "editMessageText"].includes(c.method));
    // The draft's own calls keep the pace; the reply's one edit may follow the last of them at once.
    // The pace is kept from each call's start; its arrival here varies with the machine's load (997 ms gaps
    // were seen on a quiet one), so the window is 900 ms: an unpaced draft would call every 40 ms.
    expect(mostIn(draftCalls.slice(0, -1), 900)).toBeLessThanOrEqual(1);
    expect(mostIn(draftCalls, 900)).toBeLessThanOrEqual(2);
    expect(draftCalls.length).toBeGreaterThan(2);
  });

  it("backs off for a 429's retry_after during the stream and still ends with one reply", async () => {
    const { telegram, model } = await streaming();
    telegram.failNext("sendMessageDraft", { status: 429, retryAfter: 2 });
    const held = heldReply(ANSWER, 6, { chunkDelayMs: 20 });
    model.enqueue(held.reply);
    telegram.pushUpdate(message(privateChat(42), user(42), { text: "plan?" }));
    const limited = await telegram.waitFor(() => telegram.callsTo("sendMessageDraft").find((c) => c.status === 429));
    const next = await telegram.waitFor(
      () => telegram.callsTo("sendMessageDraft").find((c) => c.status === 200),
      10_000,
    );
    expect(next.at - limited.at).toBeGreaterThanOrEqual(2000 - 5);
    held.release();
    await telegram.waitFor(() => telegram.sent[0]);
    await until(async () => (await h?.app.store.journal.pendingOutbound("telegram"))?.length === 0, "the outbox empty");
    expect(telegram.sent.map((m) => m.text)).toEqual([
      "Here is the plan: first we look, then we act, and then we look again to be sure.",
    ]);
  });

  it("a long answer: the full draft message stays, the rest continues in a new one, nothing is cut or sent twice", async () => {
    const { telegram, model } = await streaming();
    telegram.failNext("sendMessageDraft", { status: 400, description: "Bad Request: method is not available" });
    const paragraph = (i: number) => `Paragraph ${i}: ${"lorem ipsum dolor sit amet ".repeat(12).trim()}.`;
    const answer = Array.from({ length: 22 }, (_, i) => paragraph(i)).join("\n\n");
    expect(answer.length).toBeGreaterThan(6000);
    model.enqueue({ content: answer, chunkDelayMs: 2 });
    telegram.pushUpdate(message(privateChat(42), user(42), { text: "write a lot" }));
    const shown = () => telegram.sent.filter((m) => !m.deleted).map((m) => m.edits?.at(-1) ?? m.text);
    await telegram.waitFor(() => shown().join("\n\n") === answer, 30_000);
    await until(async () => (await h?.app.store.journal.pendingOutbound("telegram"))?.length === 0, "the outbox empty");
    expect(shown()).toHaveLength(2);
    expect(telegram.sent).toHaveLength(2);
  });

  it("/stop stops the stream where it is: the words so far stay, marked stopped, and nothing more comes", async () => {
    const { telegram, model } = await streaming();
    telegram.failNext("sendMessageDraft", { status: 400, description: "Bad Request: method is not available" });
    const held = heldReply(ANSWER, 6);
    model.enqueue(held.reply);
    telegram.pushUpdate(message(privateChat(42), user(42), { text: "plan?" }));
    const draft = await telegram.waitFor(() => telegram.sent[0]);
    // The stream is held after 5 pieces of 5 characters: the draft catches up with them.
    const soFar = ANSWER.slice(0, 25);
    await telegram.waitFor(() => (draft.edits?.at(-1) ?? draft.text) === soFar);
    telegram.pushUpdate(message(privateChat(42), user(42), { text: "/stop" }));
    await telegram.waitFor(() => draft.edits?.at(-1)?.endsWith("(stopped)"));
    held.release();
    await until(async () => (await h?.app.store.journal.pendingOutbound("telegram"))?.length === 0, "the outbox empty");
    // The draft and the command's own answer; no "Stopped." notice of its own, no reply after it.
    expect(telegram.sent.map((m) => m.text)).toEqual([draft.text, "Stopping the running turn."]);
    expect(draft.edits?.at(-1)).toBe("Here is the plan: fir\n\n(stopped)");
  });

  it("in a forum topic: the draft is posted in the topic replying to the user, and edited into the reply there", async () => {
    const { telegram, model } = await streaming("all");
    const held = heldReply(ANSWER);
    model.enqueue(held.reply);
    const forum = groupChat(-1007, true);
    const ann = user(42, "Ann");
    const root = { message_id: 55, chat: forum, date: 1, from: ann, forum_topic_created: { name: "t", icon_color: 1 } };
    const asked = telegram.pushUpdate(
      message(forum, ann, {
        text: "@pincer_test_bot what is the plan?",
        message_thread_id: 55,
        is_topic_message: true,
        reply_to_message: root as never,
      }),
    );
    // Held after its first chunks: this message was posted while the model still wrote.
    const draft = await telegram.waitFor(() => telegram.sent[0]);
    expect(draft).toMatchObject({ method: "sendMessage", chatId: "-1007", threadId: 55 });
    expect(draft.replyToId).toBe(asked.message?.message_id);
    expect(ANSWER.startsWith(draft.text)).toBe(true);
    expect(telegram.callsTo("sendMessageDraft")).toHaveLength(0);
    held.release();
    const final = "Here is the plan: first we look, then we act, and then we look again to be sure.";
    await telegram.waitFor(() => draft.edits?.at(-1) === final, 15_000);
    await until(async () => (await h?.app.store.journal.pendingOutbound("telegram"))?.length === 0, "the outbox empty");
    // One message in all, in the topic; every edit is of that message (editMessageText has no thread of its own).
    expect(telegram.sent).toHaveLength(1);
    expect(draft.deleted).toBeFalsy();
    const edits = telegram.callsTo("editMessageText");
    expect(edits.length).toBeGreaterThan(0);
    for (const e of edits)
      expect([String(e.params.chat_id), Number(e.params.message_id)]).toEqual(["-1007", draft.messageId]);
  });

  it("with progress notes: the note and the draft stay two messages, neither overwrites the other, one answer", async () => {
    const { telegram, model } = await streaming("private", 0.2);
    telegram.failNext("sendMessageDraft", { status: 400, description: "Bad Request: method is not available" });
    model.enqueue(
      {
        content: "Let me check the files first.",
        toolCalls: [{ name: "exec", arguments: { command: "sleep 0.8; echo one" } }],
      },
      { content: ANSWER, chunkDelayMs: 60 },
    );
    telegram.pushUpdate(message(privateChat(42), user(42), { text: "what is the plan?" }));
    const final = "Here is the plan: first we look, then we act, and then we look again to be sure.";
    const answer = await telegram.waitFor(
      () => telegram.sent.find((m) => (m.edits?.at(-1) ?? m.text) === final && !m.deleted),
      15_000,
    );
    await until(async () => (await h?.app.store.journal.pendingOutbound("telegram"))?.length === 0, "the outbox empty");
    const note = await telegram.waitFor(() => telegram.sent.find((m) => m.text.startsWith("⏳") && m.deleted));
    expect(note).not.toBe(answer);
    // The answer was streamed: posted with earlier words, then edited into the reply.
    expect(answer.text).not.toBe(final);
    expect(answer.edits?.at(-1)).toBe(final);
    // The note only ever showed progress, the draft only ever the model's words.
    for (const text of [note.text, ...(note.edits ?? [])]) expect(text.startsWith("⏳")).toBe(true);
    for (const text of [answer.text, ...(answer.edits ?? [])]) expect(text).not.toContain("⏳");
    // The words before the tool call were replaced, not left as a message of their own; one answer in all.
    expect(telegram.sent.filter((m) => !m.text.startsWith("⏳"))).toEqual([answer]);
    expect(telegram.sent.filter((m) => !m.deleted)).toEqual([answer]);
  });
});
