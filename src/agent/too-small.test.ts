import { describe, expect, it } from "vitest";
import { tooSmallSentence } from "./too-small.js";

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
