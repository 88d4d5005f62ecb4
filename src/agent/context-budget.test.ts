import { describe, expect, it } from "vitest";
import type { ChatMessage } from "../llm/model.js";
import { createTokenCounter } from "../llm/tokens.js";
import { BudgetError, fitRequest, tooSmallSentence } from "./context-budget.js";

const tokens = createTokenCounter();
const call = (id: string): ChatMessage => ({
  role: "assistant",
  content: null,
  tool_calls: [{ id, type: "function", function: { name: "exec", arguments: "{}" } }],
});
const result = (id: string, content: string): ChatMessage => ({ role: "tool", tool_call_id: id, content });

/** Every tool result follows the assistant message that called it. */
function pairsIntact(messages: ChatMessage[]): boolean {
  const called = new Set<string>();
  for (const m of messages) {
    if (m.role === "assistant") for (const c of m.tool_calls ?? []) called.add(c.id);
    if (m.role === "tool" && !called.has(m.tool_call_id)) return false;
  }
  return true;
}

describe("fitRequest", () => {
  const history: ChatMessage[] = [
    { role: "user", content: "old question ".repeat(200) },
    call("h1"),
    result("h1", "old result ".repeat(200)),
    { role: "assistant", content: "old answer" },
    { role: "user", content: "newer question" },
    { role: "assistant", content: "newer answer" },
  ];
  const turn: ChatMessage[] = [
    call("t1"),
    result("t1", "a".repeat(20_000)),
    call("t2"),
    result("t2", "b ".repeat(10_000)),
  ];
  const messages: ChatMessage[] = [
    { role: "system", content: "be brief" },
    ...history,
    { role: "user", content: "now" },
    ...turn,
  ];
  const userIndex = 1 + history.length;

  it("sends a request that fits unchanged", () => {
    expect(fitRequest({ messages, userIndex, counter: tokens, budget: 1_000_000 }).messages).toEqual(messages);
  });

  it("shortens the turn's oldest tool result first", () => {
    const full = tokens.request(messages);
    const out = fitRequest({ messages, userIndex, counter: tokens, budget: full - 500 }).messages;
    expect(String(out[userIndex + 2].content)).toMatch(/more characters cut to fit the context budget/);
    expect(out[userIndex + 4].content).toBe(messages[userIndex + 4].content);
    expect(out.slice(1, userIndex)).toEqual(history);
    expect(tokens.request(out)).toBeLessThanOrEqual(full - 500);
  });

  it("then drops history a whole turn at a time, never a call without its result", () => {
    const budget = 1000;
    const out = fitRequest({ messages, userIndex, counter: tokens, budget }).messages;
    expect(tokens.request(out)).toBeLessThanOrEqual(budget);
    expect(pairsIntact(out)).toBe(true);
    expect(out[1]).toEqual({ role: "user", content: "newer question" });
    expect(out).toContainEqual({ role: "user", content: "now" });
  });

  it("stubs tool results and cuts the user's message as a last resort, and refuses when nothing is left to cut", () => {
    const huge: ChatMessage[] = [
      { role: "system", content: "s" },
      { role: "user", content: "字".repeat(5000) },
      ...turn,
    ];
    const out = fitRequest({ messages: huge, userIndex: 1, counter: tokens, budget: 400 }).messages;
    expect(tokens.request(out)).toBeLessThanOrEqual(400);
    expect(pairsIntact(out)).toBe(true);
    expect(String(out[3].content)).toMatch(/result dropped/);
    const system: ChatMessage[] = [
      { role: "system", content: "rule ".repeat(2000) },
      { role: "user", content: "hi" },
    ];
    expect(() => fitRequest({ messages: system, userIndex: 1, counter: tokens, budget: 500 })).toThrow(BudgetError);
  });

  it("counts the tools' schemas", () => {
    const tools = [{ type: "function", function: { name: "x", description: "d ".repeat(3000), parameters: {} } }];
    const small: ChatMessage[] = [
      { role: "system", content: "s" },
      { role: "user", content: "hi" },
    ];
    expect(() => fitRequest({ messages: small, userIndex: 1, tools, counter: tokens, budget: 1000 })).toThrow(
      BudgetError,
    );
  });
});

const tools = [
  { name: "read_file", tokens: 120 },
  { name: "exec", tokens: 610 },
  { name: "cron", tokens: 540 },
  { name: "glob", tokens: 90 },
  { name: "message", tokens: 430 },
  { name: "grep", tokens: 150 },
];

describe("tooSmallSentence", () => {
  it("blames the model server when it takes less than agent.contextTokens, and names the biggest tools", () => {
    const text = tooSmallSentence({ window: 2048, configured: 32000, needed: 3329, tools });
    expect(text).toBe(
      "I cannot answer: my instructions, tools and your message need about 3,329 tokens and leave too little room for a reply in this model's context: the model server takes only 2,048 tokens (agent.contextTokens is 32,000), so start it with a larger context, or turn off tools in agent.disabledTools, the biggest being exec (610), cron (540), message (430), grep (150).",
    );
  });

  it("says to raise agent.contextTokens when that is the limit; no tools, no tool advice", () => {
    const text = tooSmallSentence({ window: 1000, configured: 1000, needed: 2100, tools: [] });
    expect(text).toContain("agent.contextTokens is 1,000, so raise it if the model takes more.");
    expect(text).not.toContain("disabledTools");
  });
});
