import { afterEach, describe, expect, it } from "vitest";
import type { InboundMessage, OutboundMessage, PersonMessage } from "../../src/bus/types.js";
import { FencedOutError } from "../../src/store/cluster.js";
import type { StoreOptions } from "../../src/store/store.js";
import { estimateTokens, type Store, type StoredMessage } from "../../src/store/store.js";
import { describeJobsConformance } from "./store-conformance-jobs.js";
import { describePeopleConformance } from "./store-conformance-people.js";
import { describeStateConformance } from "./store-conformance-state.js";
import { describeUsageConformance } from "./store-conformance-usage.js";

/** Opens a store on one database; every call opens the same database again (as after a restart). */
export type OpenStore = (options?: StoreOptions) => Promise<Store>;

/** Makes a fresh, empty database and returns how to open it. */
export type NewDatabase = () => Promise<OpenStore>;

let counter = 0;

export function inbound(chatId: string, text: string, extra: Partial<PersonMessage> = {}): InboundMessage {
  counter++;
  return {
    id: `m${counter}`,
    channel: "telegram",
    chatId,
    senderId: "42",
    senderName: "Ann",
    text,
    media: [],
    isGroup: false,
    mentionsBot: true,
    receivedAt: Date.now() + counter,
    sessionKey: `telegram:${chatId}`,
    ...extra,
  };
}

export const reply = (chatId: string, text: string, threadId?: string): OutboundMessage => ({
  channel: "telegram",
  chatId,
  text,
  kind: "reply",
  ...(threadId ? { threadId } : {}),
});

const text = (role: "user" | "assistant", n: number): StoredMessage => ({
  role,
  content: `${role} ${n} ${"x".repeat(96)}`,
});

/** Opens stores and closes every one of them after each test. */
export function storeOpener(newDatabase: NewDatabase) {
  const opened: Store[] = [];
  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close().catch(() => {});
  });
  return async () => {
    const open = await newDatabase();
    const track: OpenStore = async (options) => {
      const store = await open(options);
      opened.push(store);
      return store;
    };
    return { store: await track(), open: track };
  };
}

/**
 * The guarantees every engine of the store interface keeps, as one suite: it runs against
 * SQLite (test/store-conformance.test.ts) and against PostgreSQL alike.
 */
export function describeStoreConformance(engine: string, newDatabase: NewDatabase): void {
  describe(`the ${engine} store`, () => {
    const fresh = storeOpener(newDatabase);

    it("accepts an inbound message once, keeps it pending until it is completed, oldest first", async () => {
      const { store } = await fresh();
      const [a, b] = [inbound("1", "first"), inbound("2", "second")];
      expect(await store.journal.acceptInbound(b)).toBe(true);
      expect(await store.journal.acceptInbound(a)).toBe(true);
      expect(await store.journal.acceptInbound({ ...a, text: "replayed" })).toBe(false);
      expect((await store.journal.pendingInbound()).map((m) => m.text)).toEqual(["first", "second"]);
      expect(await store.journal.isPending(a)).toBe(true);
      await store.journal.completeInbound(a);
      expect(await store.journal.isPending(a)).toBe(false);
      expect((await store.journal.pendingInbound()).map((m) => m.id)).toEqual([b.id]);
    });

    it("keeps pending messages, turn starts and recorded steps across a crash", async () => {
      const { store, open } = await fresh();
      const msg = inbound("1", "run a tool");
      await store.journal.acceptInbound(msg);
      expect(await store.journal.recordTurnStart(msg)).toBe(1);
      await store.steps.assistant(msg, {
        role: "assistant",
        content: null,
        toolCalls: [
          { id: "c1", name: "exec", arguments: "{}" },
          { id: "c2", name: "read_file", arguments: "{}" },
        ],
      });
      await store.steps.started(msg, "c1");
      await store.steps.result(msg, "c1", "done");
      await store.steps.started(msg, "c2");
      const again = await open();
      expect((await again.journal.pendingInbound()).map((m) => m.id)).toEqual([msg.id]);
      expect(await again.journal.recordTurnStart(msg)).toBe(2);
      await again.journal.forgetTurnStart(msg);
      expect(await again.journal.recordTurnStart(msg)).toBe(2);
      const soFar = await again.steps.load(msg);
      expect(soFar.produced.map((m) => m.role)).toEqual(["assistant", "tool"]);
      expect(soFar.produced[1]).toMatchObject({ content: "done", toolCallId: "c1" });
      expect([...soFar.interrupted]).toEqual(["c2"]);
      await again.journal.completeInbound(msg);
      expect((await again.steps.load(msg)).produced).toEqual([]);
    });

    it("keeps a message's draft ids across a crash, none for a message without one", async () => {
      const { store, open } = await fresh();
      const [msg, other] = [inbound("1", "write slowly"), inbound("2", "no draft")];
      await store.journal.acceptInbound(msg);
      await store.journal.acceptInbound(other);
      await store.journal.recordDraft(msg, ["11"]);
      await store.journal.recordDraft(msg, ["11", "12"]);
      const again = await open();
      expect(await again.journal.draftOf(msg)).toEqual(["11", "12"]);
      expect(await again.journal.draftOf(other)).toEqual([]);
      expect(await again.journal.draftOf(inbound("3", "never accepted"))).toEqual([]);
    });

    it("hands out the oldest pending outbox row of each chat, threads apart, parts and retries recorded", async () => {
      const { store } = await fresh();
      const { journal } = store;
      const a1 = await journal.recordOutbound(reply("a", "a1"));
      const a2 = await journal.recordOutbound(reply("a", "a2"));
      const b1 = await journal.recordOutbound(reply("b", "b1"));
      const t1 = await journal.recordOutbound(reply("a", "t1", "7"));
      await journal.recordOutbound({ ...reply("a", "elsewhere"), channel: "discord" });
      const heads = async () => (await journal.outboxHeads("telegram")).map((r) => r.id);
      expect(await heads()).toEqual([a1, b1, t1]);
      await journal.markOutboundPartSent(a1, 1);
      await journal.deferOutbound(a1, 12345, "the platform is down");
      const [head] = await journal.outboxHeads("telegram");
      expect(head).toMatchObject({ id: a1, partsSent: 1, attempts: 1, nextAttemptAt: 12345, msg: { text: "a1" } });
      await journal.markOutboundSent(a1, 2);
      expect(await heads()).toEqual([a2, b1, t1]);
      await journal.deadLetterOutbound(a2, "refused");
      expect(await heads()).toEqual([b1, t1]);
      expect((await journal.pendingOutbound("telegram")).map((r) => r.msg.text)).toEqual(["b1", "t1"]);
      expect(await store.status.summary()).toMatchObject({ pendingOutbound: 3, deadLetters: 1 });
      await journal.prune(0, Date.now() + 1000);
      expect(await store.dashboard.outboxPending()).toBe(3);
    });

    it("keeps the platform ids a sent row posted, for an edit in the same chat only", async () => {
      const { store } = await fresh();
      const { journal } = store;
      const to = reply("a", "edit");
      const long = await journal.recordOutbound(reply("a", "three parts"));
      await journal.markOutboundPartSent(long, 1, ["101"]);
      const [head] = await journal.outboxHeads("telegram");
      expect(head).toMatchObject({ id: long, partsSent: 1, messageIds: ["101"] });
      expect(await journal.postedMessageIds(long, to)).toBeUndefined();
      await journal.markOutboundSent(long, 3, ["101", "102", "103"]);
      expect(await journal.postedMessageIds(long, to)).toEqual(["101", "102", "103"]);
      expect(await journal.postedMessageIds(long, reply("b", "edit"))).toBeUndefined();
      expect(await journal.postedMessageIds(long, reply("a", "edit", "7"))).toBeUndefined();
      expect(await journal.postedMessageIds(long, { ...to, channel: "discord" })).toBeUndefined();
      const dead = await journal.recordOutbound(reply("a", "refused"));
      await journal.deadLetterOutbound(dead, "refused");
      expect(await journal.postedMessageIds(dead, to)).toBeUndefined();
      expect(await journal.postedMessageIds(99_999, to)).toBeUndefined();
      const quiet = await journal.recordOutbound(reply("a", "no ids"));
      await journal.markOutboundSent(quiet);
      expect(await journal.postedMessageIds(quiet, to)).toEqual([]);
    });

    it("finishes a turn all or nothing: messages stored, inbound done and reply recorded together", async () => {
      const { store } = await fresh();
      const msg = inbound("1", "hello");
      await store.journal.acceptInbound(msg);
      await store.steps.started(msg, "c1");
      const user: StoredMessage = { role: "user", content: "hello", createdAt: msg.receivedAt };
      const broken = { ...reply("1", "hi"), channel: null } as unknown as OutboundMessage;
      await expect(store.turns.finishTurn(msg, [user], broken)).rejects.toThrow();
      expect(await store.journal.isPending(msg)).toBe(true);
      expect(await store.conversations.count(msg.sessionKey)).toBe(0);
      expect([...(await store.steps.load(msg)).interrupted]).toEqual(["c1"]);

      const id = await store.turns.finishTurn(msg, [user, { role: "assistant", content: "hi" }], reply("1", "hi"));
      expect(typeof id).toBe("number");
      expect(await store.journal.isPending(msg)).toBe(false);
      expect(await store.conversations.count(msg.sessionKey)).toBe(2);
      expect((await store.journal.outboxHeads("telegram")).map((r) => r.id)).toEqual([id]);
      expect((await store.steps.load(msg)).interrupted.size).toBe(0);
      const quiet = inbound("1", "/new");
      await store.journal.acceptInbound(quiet);
      expect(await store.turns.finishTurn(quiet, [], undefined)).toBeUndefined();
      expect(await store.journal.isPending(quiet)).toBe(false);
    });

    it("refuses to finish a message already answered (a process paused past its lease and back): nothing of it is written", async () => {
      const { store } = await fresh();
      const msg = inbound("1", "paused");
      await store.journal.acceptInbound(msg);
      const user: StoredMessage = { role: "user", content: "paused", createdAt: msg.receivedAt };
      const first = await store.turns.finishTurn(
        msg,
        [user, { role: "assistant", content: "re: paused" }],
        reply("1", "re: paused"),
      );
      await expect(
        store.turns.finishTurn(msg, [user, { role: "assistant", content: "late" }], reply("1", "late")),
      ).rejects.toThrow(FencedOutError);
      expect((await store.journal.outboxHeads("telegram")).map((r) => [r.id, r.msg.text])).toEqual([
        [first, "re: paused"],
      ]);
      expect(await store.conversations.count(msg.sessionKey)).toBe(2);
    });

    it("counts a message's waits for the model across a restart, and sets waiting messages aside in one step", async () => {
      const { store, open } = await fresh();
      const [a, b] = [inbound("1", "a"), inbound("1", "b")];
      for (const msg of [a, b]) await store.journal.acceptInbound(msg);
      expect(await store.journal.recordModelWait(a, 1000)).toEqual({ tries: 1, since: 1000 });
      const again = await open();
      expect(await again.journal.recordModelWait(a, 5000)).toEqual({ tries: 2, since: 1000 });
      await again.conversations.append(a.sessionKey, [{ role: "user", content: "earlier" }]);
      const id = await again.turns.setAside([a, b], reply("1", "set aside"), a.sessionKey);
      expect(await again.journal.pendingInbound()).toEqual([]);
      expect((await again.journal.outboxHeads("telegram")).map((r) => [r.id, r.msg.text])).toEqual([[id, "set aside"]]);
      expect(await again.conversations.count(a.sessionKey)).toBe(0);
      expect(await again.memory.archivedWithPending(a.sessionKey)).toHaveLength(1);
    });

    it("returns the newest history that fits the budget, oldest first, starting at a user message", async () => {
      const { store } = await fresh();
      const s = store.conversations;
      for (let i = 0; i < 50; i++) await s.append("a", [text("user", i), text("assistant", i)]);
      const lastThree = [47, 48, 49].flatMap((i) => [text("user", i), text("assistant", i)]);
      const recent = await s.recent("a", lastThree.reduce((n, m) => n + estimateTokens(m), 0) + 1);
      expect(recent.map((m) => m.content?.slice(0, 12))).toEqual(lastThree.map((m) => m.content?.slice(0, 12)));
      expect(recent.every((m) => typeof m.tokens === "number" && typeof m.createdAt === "number")).toBe(true);
      await s.append("t", [
        { role: "user", content: "list files" },
        { role: "assistant", content: null, toolCalls: [{ id: "c1", name: "list_dir", arguments: "{}" }] },
        { role: "tool", content: "a.txt\nb.txt", toolCallId: "c1" },
        { role: "assistant", content: "Two files." },
      ]);
      const all = await s.recent("t", 10_000);
      expect(all).toHaveLength(4);
      expect(all[1].toolCalls).toEqual([{ id: "c1", name: "list_dir", arguments: "{}" }]);
      expect(all[2]).toMatchObject({ role: "tool", toolCallId: "c1" });
      const budget = all.slice(1).reduce((n, m) => n + (m.tokens ?? 0), 0);
      expect(await s.recent("t", budget)).toEqual([]);
    });

    it("leaves trimmed messages out of the history, and reads a long one whole and in order", async () => {
      const { store } = await fresh();
      for (let i = 0; i < 300; i++) await store.conversations.append("a", [text("user", i), text("assistant", i)]);
      const all = await store.conversations.recent("a", Number.MAX_SAFE_INTEGER);
      expect(all.map((m) => m.content?.split(" ").slice(0, 2).join(" "))).toEqual(
        Array.from({ length: 300 }, (_, i) => [`user ${i}`, `assistant ${i}`]).flat(),
      );
      const conversationId = (await store.memory.openConversation("a")) as number;
      const pending = await store.memory.pending(conversationId, 0, 200);
      const through = pending[199];
      // Consolidation alone leaves the history where it is: it moves at trim points only.
      const entry = {
        sessionKey: "a",
        conversationId,
        firstId: pending[0].id,
        throughId: through.id,
        periodStart: pending[0].createdAt,
        periodEnd: through.createdAt,
        text: "the first hundred turns",
        tokens: 10,
      };
      expect(await store.memory.addEntry(entry)).toBe(true);
      expect(await store.conversations.recent("a", Number.MAX_SAFE_INTEGER)).toHaveLength(600);
      const [summary] = await store.memory.recentEntries(conversationId, 1000, Number.MAX_SAFE_INTEGER);
      expect(await store.memory.entriesThrough(conversationId, through.id - 1)).toBe(0);
      expect(await store.memory.entriesThrough(conversationId, through.id)).toBe(summary.id);
      await store.conversations.trim(conversationId, {
        trimmedThrough: through.id,
        summariesThrough: summary.id,
        memory: "M",
      });
      const left = await store.conversations.recent("a", Number.MAX_SAFE_INTEGER);
      expect(left).toHaveLength(400);
      expect(left[0].content).toMatch(/^user 100 /);
      expect(await store.conversations.head("a")).toMatchObject({
        trimmedThrough: through.id,
        summariesThrough: summary.id,
        memory: "M",
      });
      // Never moved back (a slower turn's older trim), and the entries shown stop where the head says.
      await store.conversations.trim(conversationId, { trimmedThrough: 5, summariesThrough: 0, memory: null });
      expect(await store.conversations.head("a")).toMatchObject({ trimmedThrough: through.id, memory: "M" });
      expect(await store.memory.recentEntries(conversationId, 1000, summary.id - 1)).toEqual([]);
      await store.conversations.showMemory(conversationId, "M2");
      expect((await store.conversations.head("a"))?.memory).toBe("M2");
      await store.conversations.archive("a");
      expect(await store.conversations.head("a")).toBeUndefined();
    });

    it("creates no conversation to read a new chat's history, keeps sessions apart and starts afresh after /new", async () => {
      const { store } = await fresh();
      expect(await store.conversations.recent("new", 1000)).toEqual([]);
      expect(await store.conversations.count("new")).toBe(0);
      expect((await store.status.summary()).openConversations).toBe(0);
      await store.conversations.append("a", [text("user", 1)]);
      await store.conversations.append("b", [text("user", 2)]);
      expect(await store.conversations.recent("a", 1000)).toHaveLength(1);
      await store.conversations.archive("a");
      expect(await store.conversations.recent("a", 1000)).toEqual([]);
      expect(await store.memory.archivedWithPending("a")).toHaveLength(1);
      expect(await store.conversations.count("b")).toBe(1);
      expect(await store.status.summary()).toMatchObject({ openConversations: 1, messages: 2 });
    });

    describeStateConformance(fresh);
    describeUsageConformance(fresh);
    describeJobsConformance(fresh);
    describePeopleConformance(fresh);
  });
}
