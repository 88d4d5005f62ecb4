import { describe, expect, it } from "vitest";
import { estimateTokens, type StoredMessage } from "../store.js";
import { SqliteConversations } from "./conversations.js";
import { openDatabase } from "./database.js";

function store() {
  return new SqliteConversations(openDatabase(":memory:"));
}

const text = (role: "user" | "assistant", n: number): StoredMessage => ({
  role,
  content: `${role} ${n} ${"x".repeat(96)}`,
});

describe("ConversationStore", () => {
  it("returns the newest messages that fit the budget, oldest first", async () => {
    const s = store();
    for (let i = 0; i < 50; i++) await s.append("a", [text("user", i), text("assistant", i)]);
    const lastSix = [47, 48, 49].flatMap((i) => [text("user", i), text("assistant", i)]);
    const recent = await s.recent("a", lastSix.reduce((n, m) => n + estimateTokens(m), 0) + 1);
    expect(recent.map((m) => m.content?.slice(0, 13))).toEqual([
      "user 47 xxxxx",
      "assistant 47 ",
      "user 48 xxxxx",
      "assistant 48 ",
      "user 49 xxxxx",
      "assistant 49 ",
    ]);
  });

  it("reads a long history: every message that fits, in order, none consolidated, none twice", async () => {
    const db = openDatabase(":memory:");
    const s = new SqliteConversations(db);
    for (let i = 0; i < 700; i++) await s.append("a", [text("user", i), text("assistant", i)]);
    const all = await s.recent("a", Number.MAX_SAFE_INTEGER);
    expect(all).toHaveLength(1400);
    expect(all.map((m) => m.content?.split(" ").slice(0, 2).join(" "))).toEqual(
      Array.from({ length: 700 }, (_, i) => [`user ${i}`, `assistant ${i}`]).flat(),
    );
    const last500 = Array.from({ length: 250 }, (_, i) => [text("user", 450 + i), text("assistant", 450 + i)]).flat();
    const some = await s.recent("a", last500.reduce((n, m) => n + estimateTokens(m), 0) + 1);
    expect(some).toHaveLength(500);
    expect(some[0].content).toMatch(/^user 450 /);
    expect(some.at(-1)?.content).toMatch(/^assistant 699 /);
    // Consolidated turns are left out.
    const id = db.prepare("SELECT id FROM messages WHERE content LIKE 'assistant 599 %'").pluck().get();
    db.prepare("UPDATE conversations SET consolidated_through = ?").run(id);
    const left = await s.recent("a", Number.MAX_SAFE_INTEGER);
    expect(left).toHaveLength(200);
    expect(left[0].content).toMatch(/^user 600 /);
  });

  it("never starts the context inside a tool exchange", async () => {
    const s = store();
    await s.append("a", [
      { role: "user", content: "list files" },
      { role: "assistant", content: null, toolCalls: [{ id: "c1", name: "list_dir", arguments: "{}" }] },
      { role: "tool", content: "a.txt\nb.txt", toolCallId: "c1" },
      { role: "assistant", content: "Two files." },
    ]);
    const all = await s.recent("a", 10_000);
    expect(all).toHaveLength(4);
    expect(all[1].toolCalls).toEqual([{ id: "c1", name: "list_dir", arguments: "{}" }]);
    const budget = all.slice(2).reduce((n, m) => n + estimateTokens(m), 0);
    expect(await s.recent("a", budget + estimateTokens(all[1]))).toEqual([]);
  });

  it("reads a new chat's empty history without creating its conversation (append does, with its messages)", async () => {
    const db = openDatabase(":memory:");
    const s = new SqliteConversations(db);
    const conversations = () => db.prepare("SELECT count(*) FROM conversations").pluck().get();
    expect(await s.recent("new", 1000)).toEqual([]);
    expect(conversations()).toBe(0);
    await s.append("new", [text("user", 1)]);
    expect(conversations()).toBe(1);
    expect(await s.recent("new", 1000)).toHaveLength(1);
  });

  it("keeps sessions apart and starts fresh after archive", async () => {
    const s = store();
    await s.append("a", [text("user", 1)]);
    await s.append("b", [text("user", 2)]);
    expect(await s.recent("a", 1000)).toHaveLength(1);
    await s.archive("a");
    expect(await s.recent("a", 1000)).toEqual([]);
    expect(await s.count("b")).toBe(1);
  });
});
