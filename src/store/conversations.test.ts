import { describe, expect, it } from "vitest";
import { ConversationStore, estimateTokens, type StoredMessage } from "./conversations.js";
import { openDatabase } from "./database.js";

function store() {
  return new ConversationStore(openDatabase(":memory:"));
}

const text = (role: "user" | "assistant", n: number): StoredMessage => ({
  role,
  content: `${role} ${n} ${"x".repeat(96)}`,
});

describe("ConversationStore", () => {
  it("returns the newest messages that fit the budget, oldest first", () => {
    const s = store();
    for (let i = 0; i < 50; i++) s.append("a", [text("user", i), text("assistant", i)]);
    const lastSix = [47, 48, 49].flatMap((i) => [text("user", i), text("assistant", i)]);
    const recent = s.recent("a", lastSix.reduce((n, m) => n + estimateTokens(m), 0) + 1);
    expect(recent.map((m) => m.content?.slice(0, 13))).toEqual([
      "user 47 xxxxx",
      "assistant 47 ",
      "user 48 xxxxx",
      "assistant 48 ",
      "user 49 xxxxx",
      "assistant 49 ",
    ]);
  });

  it("never starts the context inside a tool exchange", () => {
    const s = store();
    s.append("a", [
      { role: "user", content: "list files" },
      { role: "assistant", content: null, toolCalls: [{ id: "c1", name: "list_dir", arguments: "{}" }] },
      { role: "tool", content: "a.txt\nb.txt", toolCallId: "c1" },
      { role: "assistant", content: "Two files." },
    ]);
    const all = s.recent("a", 10_000);
    expect(all).toHaveLength(4);
    expect(all[1].toolCalls).toEqual([{ id: "c1", name: "list_dir", arguments: "{}" }]);
    const budget = all.slice(2).reduce((n, m) => n + estimateTokens(m), 0);
    expect(s.recent("a", budget + estimateTokens(all[1]))).toEqual([]);
  });

  it("keeps sessions apart and starts fresh after archive", () => {
    const s = store();
    s.append("a", [text("user", 1)]);
    s.append("b", [text("user", 2)]);
    expect(s.recent("a", 1000)).toHaveLength(1);
    s.archive("a");
    expect(s.recent("a", 1000)).toEqual([]);
    expect(s.count("b")).toBe(1);
  });
});
