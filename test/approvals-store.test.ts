import { rmSync } from "node:fs";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { Approvals } from "../src/approvals/approvals.js";
import type { OutboundMessage } from "../src/bus/types.js";
import { openPostgresStore } from "../src/store/postgres/postgres-store.js";
import { openSqliteStore } from "../src/store/sqlite/sqlite-store.js";
import type { NewApproval, Store } from "../src/store/store.js";
import { tempHome } from "./helpers/app.js";
import { hasPostgres, startPostgres, type TestPostgres } from "./helpers/postgres.js";
import { toolContext } from "./helpers/tools.js";
import { until } from "./helpers/until.js";

const prompt: OutboundMessage = { channel: "telegram", chatId: "-100", text: "allow?", kind: "reply" };
const edit = (text: string) => (): OutboundMessage => ({ ...prompt, text, editOf: { outboxId: 1 }, buttons: [] });

function approval(id: string, over: Partial<NewApproval> = {}): NewApproval {
  return {
    id,
    sessionKey: "telegram:-100",
    turnKey: `telegram:-100|m-${id}`,
    toolCallId: "call_1",
    tool: "exec",
    summary: "ls",
    remember: "exec:ls",
    decider: "telegram:42",
    createdAt: 1000,
    expiresAt: 6000,
    ...over,
  };
}

/** The same checks on both engines: decisions are taken once, whoever asks. */
function describeApprovals(engine: string, open: () => Promise<{ a: Store; b: Store }>) {
  describe(`pending approvals on ${engine}`, () => {
    it("records a call's approval once with its prompt; asking again finds the same one", async () => {
      const { a, b } = await open();
      const first = await a.approvals.request(approval("p1"), prompt);
      expect(first.created).toBe(true);
      expect(first.approval).toMatchObject({ id: "p1", state: "pending", decider: "telegram:42" });
      expect(first.approval.promptOutboxId).toBeGreaterThan(0);
      // A resumed turn, or a second process, asks about the same call: no second prompt.
      const again = await b.approvals.request(approval("p1-other", { turnKey: "telegram:-100|m-p1" }), prompt);
      expect(again).toMatchObject({ created: false, approval: { id: "p1" } });
      expect((await a.journal.outboxHeads("telegram")).map((row) => row.msg.text)).toEqual(["allow?"]);
    });

    it("of many decisions at once (taps, devices, processes) exactly one is taken", async () => {
      const { a, b } = await open();
      await a.approvals.request(approval("p2"), prompt);
      const decisions = await Promise.all(
        ["once", "deny", "always", "once", "deny", "always"].map((choice, i) =>
          (i % 2 ? a : b).approvals.decide("p2", choice as "once", `tapper ${i}`, 2000, edit(`decided ${i}`)),
        ),
      );
      const taken = decisions.filter((d) => d !== undefined);
      expect(taken).toHaveLength(1);
      const stored = await a.approvals.get("p2");
      expect(stored).toMatchObject({ decidedBy: taken[0]?.decidedBy, choice: taken[0]?.choice });
      // Only the winner's edit is in the outbox, after the prompt.
      const texts = (await a.journal.pendingOutbound("telegram")).map((row) => row.msg.text);
      expect(texts.filter((text) => text.startsWith("decided"))).toHaveLength(1);
      expect(await a.approvals.expire("p2", 9000, edit("expired"))).toBeUndefined();
    });

    it("a decision after the deadline is not taken; expiring is, once; Always allow joins the chat's list", async () => {
      const { a, b } = await open();
      await a.approvals.request(approval("p3"), prompt);
      expect(await a.approvals.decide("p3", "once", "Ann", 6000, edit("late"))).toBeUndefined();
      expect(await b.approvals.expire("p3", 6000, edit("expired"))).toMatchObject({ state: "expired" });
      expect(await a.approvals.expire("p3", 6001, edit("expired again"))).toBeUndefined();

      await a.approvals.request(approval("p4", { turnKey: "t4", remember: "exec:make" }), prompt);
      expect(await b.approvals.decide("p4", "always", "Ann", 2000, edit("always"))).toMatchObject({
        state: "allowed",
        choice: "always",
      });
      expect(await a.approvals.allowedAt("telegram:-100", "exec:make")).toBe(2000);
      expect(await a.approvals.allowedAt("telegram:42", "exec:make")).toBeUndefined();
      // Allowed always once more (files it obeys changed, so it was asked again): the entry dates from then.
      await a.approvals.request(approval("p4b", { turnKey: "t4b", remember: "exec:make" }), prompt);
      await b.approvals.decide("p4b", "always", "Bob", 3000, edit("always again"));
      expect(await a.approvals.allowedAt("telegram:-100", "exec:make")).toBe(3000);
      expect(await a.approvals.revoke("telegram:-100", "exec:make")).toBe(true);
      expect(await a.approvals.revoke("telegram:-100", "exec:make")).toBe(false);
      expect(await a.approvals.allowedAt("telegram:-100", "exec:make")).toBeUndefined();

      await a.approvals.request(approval("p5", { turnKey: "t5" }), prompt);
      await a.approvals.decide("p5", "deny", "Ann", 2000, edit("no"));
      expect(await a.approvals.deniedInTurn("t5", "ls")).toBe(true);
      expect(await a.approvals.deniedInTurn("t5", "ls -la")).toBe(false);
      expect(await a.approvals.pending()).toEqual([]);
    });

    it("retention drops approvals older than the audit's age, pending or not, and keeps newer ones", async () => {
      const { a } = await open();
      const day = 86_400_000;
      const now = 100 * day;
      await a.approvals.request(
        approval("old", { createdAt: now - 40 * day, expiresAt: now - 40 * day + 300_000 }),
        prompt,
      );
      await a.approvals.request(approval("new", { createdAt: now - day, expiresAt: now - day + 300_000 }), prompt);
      const ages = { auditDays: 30, archivedConversationDays: 90, deadLetterDays: 30, usageDays: 90 };
      await a.retention.prune(ages, now);
      expect(await a.approvals.get("old")).toBeUndefined();
      expect(await a.approvals.get("new")).toMatchObject({ state: "pending" });
    });
  });
}

const homes: string[] = [];
afterAll(() => {
  for (const home of homes) rmSync(home, { recursive: true, force: true });
});

const stores: Store[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
});

describeApprovals("SQLite", async () => {
  const home = tempHome("pincer-approvals-");
  homes.push(home);
  const file = join(home, "pincer.db");
  // One process per SQLite file (clustering is PostgreSQL's): its decisions race within it.
  const store = await openSqliteStore(file);
  stores.push(store);
  return { a: store, b: store };
});

describe.skipIf(!hasPostgres())("on PostgreSQL", () => {
  let server: TestPostgres | undefined;
  beforeAll(async () => {
    server = await startPostgres();
  }, 60_000);
  afterAll(() => server?.stop());
  it("a call waiting in one process is let through by a tap taken in another (each with its own store)", async () => {
    const url = await (server as TestPostgres).newDatabase();
    const [a, b] = [await openPostgresStore(url), await openPostgresStore(url)];
    stores.push(a, b);
    const quiet = { bus: { outboundRecorded() {} }, timeoutSeconds: 60, log: pino({ level: "silent" }) };
    const policy = { exec: "ask" as const, tools: [], allowPatterns: [] };
    const waiting = new Approvals({ ...quiet, store: a.approvals, policy });
    const deciding = new Approvals({ ...quiet, store: b.approvals, policy });
    const workspace = tempHome("pincer-approvals-ws-");
    homes.push(workspace);
    const ctx = toolContext("c1", workspace);
    const call = { id: "call_1", name: "exec", arguments: JSON.stringify({ command: "echo hi" }) };
    const result = waiting.check(call, ctx, true);
    const asked = await until(async () => (await b.approvals.pending())[0], "the request in the other process");
    const tap = { id: "t1", channel: "console" as const, chatId: "c1", senderId: "u", senderName: "u" };
    const answer = await deciding.tap({
      ...tap,
      isGroup: false,
      messageId: "1",
      data: `a:${asked.id}:once`,
      receivedAt: 0,
    });
    expect(answer).toEqual({ text: "Allowed once." });
    expect(await result).toBeUndefined();
  });

  describeApprovals("PostgreSQL", async () => {
    const url = await (server as TestPostgres).newDatabase();
    const pair = { a: await openPostgresStore(url), b: await openPostgresStore(url) };
    stores.push(pair.a, pair.b);
    return pair;
  });
});
