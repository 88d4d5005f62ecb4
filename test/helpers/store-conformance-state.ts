import { expect, it, onTestFinished, vi } from "vitest";
import type { NewEntry } from "../../src/store/store.js";
import { type Fresh, job, run } from "./store-conformance-jobs.js";

const DAY = 24 * 60 * 60 * 1000;
const scope = (sessionKey: string, memoryFile = false) => ({ sessionKey, memoryFile, limit: 10 });

/** Consolidation, search, jobs, pairing, helpers, the control page's views and retention. */
export function describeStateConformance(fresh: Fresh): void {
  it("moves the consolidation watermark once: a second run over the same messages stores nothing", async () => {
    const { store } = await fresh();
    await store.conversations.append("s", [
      { role: "user", content: "one", createdAt: 1000 },
      { role: "assistant", content: "two", createdAt: 2000 },
      { role: "user", content: "three", createdAt: 3000 },
    ]);
    const conversationId = (await store.memory.openConversation("s")) as number;
    const before = await store.memory.pendingTokens(conversationId);
    const rows = await store.memory.pending(conversationId, 0, 2);
    expect(rows.map((r) => [r.role, r.content, r.createdAt])).toEqual([
      ["user", "one", 1000],
      ["assistant", "two", 2000],
    ]);
    const entry: NewEntry = {
      sessionKey: "s",
      conversationId,
      firstId: rows[0].id,
      throughId: rows[1].id,
      periodStart: 1000,
      periodEnd: 2000,
      text: "counted to two",
      tokens: 5,
    };
    const [first, second] = await Promise.all([store.memory.addEntry(entry), store.memory.addEntry(entry)]);
    expect([first, second].sort()).toEqual([false, true]);
    expect(await store.memory.recentEntries(conversationId, 1000)).toHaveLength(1);
    expect(await store.memory.pendingTokens(conversationId)).toBe(before - rows[0].tokens - rows[1].tokens);
    expect((await store.memory.pending(conversationId, 1000)).map((r) => r.content)).toEqual(["three"]);
    await store.memory.addEntry({ ...entry, firstId: rows[1].id + 1, throughId: rows[1].id + 1, tokens: 7 });
    expect((await store.memory.recentEntries(conversationId, 7)).map((e) => e.tokens)).toEqual([7]);
    expect((await store.memory.recentEntries(conversationId, 100)).map((e) => e.text)).toHaveLength(2);
  });

  it("searches what the chat may see, in any script, CJK too, and MEMORY.md only where allowed", async () => {
    const { store } = await fresh();
    await store.conversations.append("telegram:1", [
      { role: "user", content: "my sister Anna has her birthday in May" },
      { role: "assistant", content: "明天中午我们在湖边吃午饭" },
      { role: "tool", content: "tool output about Anna", toolCallId: "c1" },
    ]);
    await store.conversations.archive("telegram:1");
    await store.conversations.append("telegram:1", [{ role: "user", content: "ok" }]);
    await store.conversations.append("telegram:2", [{ role: "user", content: "Anna is someone else's sister" }]);
    await store.memory.syncMemoryFile("main", "h1", 5000, ["Anna likes tulips"]);
    const hits = await store.memory.search("Anna birthday", scope("telegram:1"));
    expect(hits.map((h) => [h.kind, h.role])).toEqual([["message", "user"]]);
    expect(hits[0].snippet).toContain("«Anna»");
    const withFile = await store.memory.search("Anna", scope("telegram:1", true));
    expect(withFile.map((h) => h.kind).sort()).toEqual(["memory", "message"]);
    expect(withFile.find((h) => h.kind === "memory")).toMatchObject({ at: 5000, snippet: "«Anna» likes tulips" });
    expect((await store.memory.search("吃午饭", scope("telegram:1")))[0]?.snippet).toContain("«吃午饭»");
    expect((await store.memory.search("湖边", scope("telegram:1")))[0]?.snippet).toContain("«湖边»");
    expect(await store.memory.search("tulips", scope("telegram:2"))).toEqual([]);
    await store.memory.syncMemoryFile("main", "h2", 6000, ["Bob likes roses"]);
    expect(await store.memory.search("tulips", scope("telegram:1", true))).toEqual([]);
    expect(typeof (await store.memory.indexPending())).toBe("number");
  });

  it("keeps each agent's conversations, summaries and MEMORY.md apart by the agent in the session key", async () => {
    const { store } = await fresh();
    await store.conversations.append("telegram:1", [{ role: "user", content: "main knows the shed code 4711" }]);
    await store.conversations.append("shop/telegram:1", [{ role: "user", content: "shop knows the shed colour" }]);
    await store.memory.syncMemoryFile("main", "m1", 5000, ["main's MEMORY: shed key under the pot"]);
    await store.memory.syncMemoryFile("shop", "s1", 6000, ["shop's MEMORY: shed prices"]);
    const found = async (key: string) =>
      (await store.memory.search("shed", scope(key, true))).map((h) => h.snippet).sort();
    expect(await found("telegram:1")).toEqual([
      "main knows the «shed» code 4711",
      "main's MEMORY: «shed» key under the pot",
    ]);
    expect(await found("shop/telegram:1")).toEqual(["shop knows the «shed» colour", "shop's MEMORY: «shed» prices"]);
    expect(await found("shop/telegram:2")).toEqual(["shop's MEMORY: «shed» prices"]);
    // A re-index of one agent's file leaves the other's alone.
    await store.memory.syncMemoryFile("shop", "s2", 7000, []);
    expect(await found("telegram:1")).toHaveLength(2);
    expect(await found("shop/telegram:1")).toEqual(["shop knows the «shed» colour"]);
    expect(await store.conversations.recent("shop/telegram:1", 10_000)).toHaveLength(1);
  });

  it("folds accents and case in search, as people type: cafe finds Café, and café finds cafe", async () => {
    const { store } = await fresh();
    await store.conversations.append("telegram:1", [
      { role: "user", content: "we met at the Café Müller in Zürich" },
      { role: "assistant", content: "the cafe near the station opens at eight" },
    ]);
    const conversationId = (await store.memory.openConversation("telegram:1")) as number;
    const entry = { sessionKey: "telegram:1", conversationId, periodStart: 1, periodEnd: 2, tokens: 5 };
    const [first] = await store.memory.pending(conversationId, 0, 1);
    await store.memory.addEntry({
      ...entry,
      firstId: first.id,
      throughId: first.id,
      text: "Élodie prefers crème brûlée",
    });
    await store.memory.syncMemoryFile("main", "h1", 5000, ["Noël at the chalet in Megève"]);
    const texts = async (query: string) =>
      (await store.memory.search(query, scope("telegram:1", true))).map((h) => h.snippet);
    expect(await texts("muller zurich")).toEqual(["we met at the Café «Müller» in «Zürich»"]);
    const both = ["the «cafe» near the station opens at eight", "we met at the «Café» Müller in Zürich"];
    expect((await texts("cafe")).sort()).toEqual(both);
    expect((await texts("CAFÉ")).sort()).toEqual(both);
    expect(await texts("elodie creme brulee")).toEqual(["«Élodie» prefers «crème» «brûlée»"]);
    expect(await texts("megeve")).toEqual(["Noël at the chalet in «Megève»"]);
    // Typed with a combining accent (e + U+0301), as some keyboards send it.
    expect(await texts("Mege\u0301ve")).toEqual(["Noël at the chalet in «Megève»"]);
  });

  it("keeps cron jobs: per conversation, due and earliest without the paused ones, removed only by their own chat", async () => {
    const { store } = await fresh();
    const a = await store.jobs.add(job({ name: "a" }));
    const b = await store.jobs.add(job({ nextRunAt: 1_030_000, origin: { ...job().origin, channel: "discord" } }));
    expect(a.id).toMatch(/^[0-9a-f]{8}$/);
    const counters = { runCount: 0, failures: 0, limits: {} };
    expect(await store.jobs.get(a.id)).toEqual({ ...job({ name: "a" }), id: a.id, ...counters });
    expect(await store.jobs.listBySession("telegram:1")).toHaveLength(2);
    expect((await store.jobs.listAll()).map((j) => j.id)).toEqual([b.id, a.id]);
    expect((await store.jobs.due(1_060_000)).map((j) => j.id)).toEqual([b.id, a.id]);
    expect((await store.jobs.due(1_060_000, ["telegram"])).map((j) => j.id)).toEqual([a.id]);
    expect(await store.jobs.due(1_060_000, [])).toEqual([]);
    await store.jobs.pause(b.id, 1_000_500);
    expect((await store.jobs.get(b.id))?.pausedAt).toBe(1_000_500);
    expect(await store.jobs.earliestNextRun()).toBe(1_060_000);
    expect(await store.jobs.earliestNextRun(["discord"])).toBeUndefined();
    await store.jobs.postpone(a.id, 1_120_000);
    expect((await store.jobs.listBySession("telegram:1")).map((j) => j.nextRunAt)).toEqual([1_030_000, 1_120_000]);
    expect(await store.jobs.remove(a.id, "telegram:2")).toBe(false);
    expect(await store.jobs.remove(a.id, "telegram:1")).toBe(true);
    expect(await store.jobs.remove(b.id)).toBe(true);
    expect(await store.jobs.listAll()).toEqual([]);
  });

  it("lets one slot of a job be taken once, with its run entering the inbox in the same step", async () => {
    const { store } = await fresh();
    const { id } = await store.jobs.add(job());
    const slot = { jobId: id, scheduledAt: 1_060_000, nextRunAt: 1_120_000, run: run("r1"), ranAt: 1_060_005 };
    const takes = await Promise.all([store.jobs.takeSlot(slot), store.jobs.takeSlot(slot)]);
    expect(takes.filter((t) => t.taken)).toEqual([{ taken: true, accepted: true }]);
    expect(await store.jobs.get(id)).toMatchObject({
      nextRunAt: 1_120_000,
      lastRunAt: 1_060_005,
      lastDeliveryId: "r1",
    });
    expect(await store.journal.isPending(run("r1"))).toBe(true);
    // The same run again (a restored row put the job back): taken, but the inbox drops the copy.
    await store.jobs.postpone(id, 1_060_000);
    expect(await store.jobs.takeSlot(slot)).toEqual({ taken: true, accepted: false });
    // A skipped slot moves the job without a run; the last slot removes a one-shot.
    expect(await store.jobs.takeSlot({ jobId: id, scheduledAt: 1_120_000, nextRunAt: 1_180_000 })).toEqual({
      taken: true,
      accepted: false,
    });
    expect((await store.jobs.get(id))?.lastDeliveryId).toBe("r1");
    expect(await store.jobs.takeSlot({ ...slot, scheduledAt: 1_180_000, nextRunAt: null, run: run("r2") })).toEqual({
      taken: true,
      accepted: true,
    });
    expect(await store.jobs.get(id)).toBeUndefined();
  });

  it("pairs strangers: one code each, the oldest makes room in a flood, approve resumes and revoke pauses jobs", async () => {
    let now = 1_000_000;
    const { open } = await fresh();
    const store = await open();
    // The store's clock is Date's: faked alone, so the database's connections keep their real timers.
    vi.useFakeTimers({ toFake: ["Date"], now });
    onTestFinished(() => {
      vi.useRealTimers();
    });
    const tick = (ms: number) => {
      now += ms;
      vi.setSystemTime(now);
    };
    const first = await store.pairing.request("telegram", "99", "Eve");
    expect(first).toMatchObject({ isNew: true, userId: "99", expiresAt: now + 3_600_000 });
    expect(first.code).toMatch(/^[A-HJ-NP-Z2-9]{8}$/);
    await store.pairing.markTold("telegram", "99");
    tick(1000);
    expect(await store.pairing.request("telegram", "99", "Eve")).toMatchObject({
      isNew: false,
      code: first.code,
      toldAt: now - 1000,
    });
    tick(3_600_000);
    expect((await store.pairing.request("telegram", "99", "Eve")).isNew).toBe(true);
    expect(await store.pairing.approve("telegram", first.code)).toBeUndefined();
    const codes: string[] = [];
    for (let i = 0; i < 25; i++) {
      tick(1);
      codes.push((await store.pairing.request("telegram", `s${i}`, `stranger ${i}`)).code);
    }
    expect((await store.pairing.pending()).map((p) => p.userId)).toEqual(
      Array.from({ length: 10 }, (_, i) => `s${i + 15}`),
    );
    expect(await store.pairing.approve("telegram", codes[0])).toBeUndefined();
    expect(await store.pairing.approve("discord", codes[24])).toBeUndefined();
    await store.jobs.add(job({ owner: { channel: "telegram", userId: "s24" } }));
    expect(await store.pairing.approve("telegram", codes[24].toLowerCase())).toMatchObject({
      user: { userId: "s24", userName: "stranger 24" },
      resumedJobs: 0,
    });
    expect(await store.pairing.isApproved("telegram", "s24")).toBe(true);
    expect(await store.pairing.approved()).toEqual([{ channel: "telegram", userId: "s24", userName: "stranger 24" }]);
    expect(await store.pairing.revoke("telegram", "s24", now)).toEqual({ revoked: true, pausedJobs: 1 });
    expect(await store.pairing.revoke("telegram", "s24", now)).toEqual({ revoked: false, pausedJobs: 0 });
    expect(await store.pairing.isApproved("telegram", "s24")).toBe(false);
    const asked = await store.pairing.request("telegram", "s24", "stranger 24");
    expect((await store.pairing.approve("telegram", asked.code))?.resumedJobs).toBe(1);
    expect(await store.pairing.deny("telegram", "s23")).toBe(true);
    expect(await store.pairing.deny("telegram", "s23")).toBe(false);
    expect(await store.pairing.isApproved("telegram", "s24")).toBe(true);
  });

  it("keeps each chat's /model choice apart, across a reopen (another process sees it), until set back", async () => {
    const { store, open } = await fresh();
    await store.chatModels.set("telegram:1", "gpt-4o", "42");
    await store.chatModels.set("telegram:1", "qwen2.5:7b", "43");
    await store.chatModels.set("discord:9:thread:3", "gpt-4o", "7");
    const other = await open();
    expect(await other.chatModels.get("telegram:1")).toBe("qwen2.5:7b");
    expect(await other.chatModels.get("discord:9:thread:3")).toBe("gpt-4o");
    expect(await other.chatModels.get("discord:9")).toBeUndefined();
    await other.chatModels.set("telegram:1", undefined, "42");
    expect(await store.chatModels.get("telegram:1")).toBeUndefined();
    await store.conversations.archive("discord:9:thread:3");
    expect(await store.chatModels.get("discord:9:thread:3")).toBe("gpt-4o");
  });

  it("keeps each chat's /voice choice apart, across a reopen, and replaces it", async () => {
    const { store, open } = await fresh();
    await store.chatVoice.set("telegram:1", "always", "42");
    await store.chatVoice.set("telegram:1", "off", "42");
    await store.chatVoice.set("discord:9:thread:3", "auto", "7");
    const other = await open();
    expect(await other.chatVoice.get("telegram:1")).toBe("off");
    expect(await other.chatVoice.get("discord:9:thread:3")).toBe("auto");
    expect(await other.chatVoice.get("discord:9")).toBeUndefined();
  });

  it("records helper runs, finishing each once, and lists the ones a crash left running", async () => {
    const { store, open } = await fresh();
    const origin = run("spawner");
    const base = { sessionKey: "telegram:1", task: "read everything", model: "m", origin };
    await store.helperRuns.start({ ...base, id: "h-1", label: "one", startedAt: 1000 });
    await store.helperRuns.start({ ...base, id: "h-2", startedAt: 2000 });
    await store.helperRuns.finish("h-1", "done", "x".repeat(30_000), 3000);
    await store.helperRuns.finish("h-1", "failed", "too late", 4000);
    const again = await open();
    expect((await again.helperRuns.running()).map((r) => [r.id, r.origin.id])).toEqual([["h-2", "spawner"]]);
    const [latest, older] = await again.helperRuns.recent(10);
    expect(latest).toMatchObject({ id: "h-2", status: "running", label: undefined });
    expect(older).toMatchObject({ id: "h-1", status: "done", label: "one", finishedAt: 3000 });
    expect(older.result?.length).toBeLessThan(30_000);
  });

  it("shows the control page a conversation's messages with the audit's tool calls between them", async () => {
    const { store } = await fresh();
    const t = Date.now();
    await store.conversations.append("telegram:1", [{ role: "user", content: "please list", createdAt: t - 1000 }]);
    await store.audit.record({
      sessionKey: "telegram:1",
      tool: "list_dir",
      arguments: "{}",
      result: "a",
      durationMs: 3,
    });
    await store.audit.record({
      sessionKey: "telegram:1",
      tool: "exec",
      arguments: "{}",
      result: "Error: no",
      durationMs: 1,
    });
    await store.conversations.append("telegram:1", [{ role: "assistant", content: "one file", createdAt: t + 60_000 }]);
    const history = await store.dashboard.history("telegram:1");
    expect(history.map((e) => e.text ?? `${e.tool}:${e.ok}`)).toEqual([
      "please list",
      "list_dir:true",
      "exec:false",
      "one file",
    ]);
    expect(await store.dashboard.history("telegram:9")).toEqual([]);
    const [summary] = await store.dashboard.conversations();
    expect(summary).toMatchObject({
      sessionKey: "telegram:1",
      messages: 2,
      lastText: "one file",
      lastRole: "assistant",
    });
    expect(await store.dashboard.ping()).toBe(true);
    expect(await store.status.summary()).toMatchObject({ toolCalls: 2, lastToolCall: { tool: "exec", ok: false } });
  });

  it("prunes what only grows, never an open conversation or a pending reply", async () => {
    const { store } = await fresh();
    await store.conversations.append("old", [{ role: "user", content: "long ago" }]);
    await store.conversations.archive("old");
    await store.conversations.append("open", [{ role: "user", content: "still talking", createdAt: 1 }]);
    await store.audit.record({ sessionKey: "open", tool: "exec", arguments: "{}", result: "ok", durationMs: 1 });
    const call = { kind: "conversation", model: "m", promptTokens: 1, completionTokens: 1, cachedTokens: 0 };
    await store.usage.record({ ...call, sessionKey: "open", estimated: false, at: Date.now() });
    const dead = await store.journal.recordOutbound({ channel: "telegram", chatId: "1", text: "x", kind: "reply" });
    await store.journal.deadLetterOutbound(dead, "refused");
    await store.journal.recordOutbound({ channel: "telegram", chatId: "2", text: "pending", kind: "reply" });
    const jobRun = { id: "cron:j:1", jobId: "j", sessionKey: "open", trigger: "schedule", outcome: "ok" } as const;
    const counts = { promptTokens: 1, completionTokens: 1, toolCalls: 0 };
    await store.jobRuns.record({ ...jobRun, ...counts, scheduledAt: Date.now(), firedAt: Date.now() });
    const ages = { auditDays: 30, archivedConversationDays: 90, deadLetterDays: 30, usageDays: 90, jobRunDays: 60 };
    const none = { auditRows: 0, conversations: 0, messages: 0, deadLetters: 0, usageRows: 0, jobRuns: 0 };
    expect(await store.retention.prune(ages)).toEqual(none);
    const later = Date.now() + 100 * DAY;
    expect(await store.retention.prune(ages, later)).toEqual({
      auditRows: 1,
      conversations: 1,
      messages: 1,
      deadLetters: 1,
      usageRows: 1,
      jobRuns: 1,
    });
    expect(await store.status.summary()).toMatchObject({
      messages: 1,
      toolCalls: 0,
      deadLetters: 0,
      pendingOutbound: 1,
    });
    expect((await store.conversations.recent("open", 1000)).map((m) => m.content)).toEqual(["still talking"]);
    expect(await store.memory.search("long ago", scope("old"))).toEqual([]);
  });
}
