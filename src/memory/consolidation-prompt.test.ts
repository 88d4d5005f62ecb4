import { describe, expect, it } from "vitest";
import { parseConsolidation, transcript } from "./consolidation-prompt.js";

describe("parseConsolidation", () => {
  it("reads the JSON object, also inside a code fence", () => {
    expect(parseConsolidation('{"summary": "We planned a trip.", "facts": ["Sister Anna: birthday 5 March"]}')).toEqual(
      {
        summary: "We planned a trip.",
        facts: ["Sister Anna: birthday 5 March"],
      },
    );
    expect(parseConsolidation('```json\n{"summary": "ok so far", "facts": []}\n```')).toEqual({
      summary: "ok so far",
      facts: [],
    });
  });

  it("refuses garbage instead of storing it", () => {
    for (const reply of [
      "",
      "Sure! Here is a summary of the conversation.",
      "{not json",
      "[]",
      "null",
      '{"summary": ""}',
      '{"summary": 42}',
      '{"summary": "fine", "facts": "not a list"}',
      '{"summary": "fine", "facts": [1, 2]}',
      JSON.stringify({ summary: "x".repeat(5000), facts: [] }),
    ]) {
      expect(parseConsolidation(reply), reply.slice(0, 40)).toBeUndefined();
    }
  });

  it("drops overlong facts and keeps at most twelve", () => {
    const facts = ["y".repeat(400), ...Array.from({ length: 20 }, (_, i) => `fact ${i}`)];
    expect(parseConsolidation(JSON.stringify({ summary: "s.", facts }))?.facts).toHaveLength(12);
  });
});

describe("transcript", () => {
  it("keeps who said what and when, and tool output only briefly", () => {
    const text = transcript(
      [
        { id: 1, role: "user", content: "list files", tokens: 3, createdAt: 0 },
        {
          id: 2,
          role: "assistant",
          content: null,
          toolCalls: [{ id: "c", name: "exec", arguments: '{"command":"ls"}' }],
          tokens: 9,
          createdAt: 0,
        },
        { id: 3, role: "tool", content: "z".repeat(1000), tokens: 300, createdAt: 0 },
        { id: 4, role: "assistant", content: "Two files.", tokens: 3, createdAt: 0 },
      ],
      () => "2026-03-05 10:00",
    );
    expect(text).toContain("[2026-03-05 10:00] User: list files");
    expect(text).toContain('Assistant used exec({"command":"ls"})');
    expect(text).toContain("Assistant: Two files.");
    expect(text.length).toBeLessThan(600);
  });
});
