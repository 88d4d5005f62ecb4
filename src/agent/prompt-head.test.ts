import { describe, expect, it } from "vitest";
import type { HistoryRow } from "../store/history-cache.js";
import { memoryToShow, summariesBlock, trimPoint, withSummaries } from "./prompt-head.js";

/** Turns of a user message and an answer, ids from 11, each message 10 tokens. */
const turns = (n: number): HistoryRow[] =>
  Array.from({ length: n * 2 }, (_, i) => ({
    id: 11 + i,
    message: { role: i % 2 === 0 ? "user" : "assistant", content: `m${i}`, tokens: 10 },
  }));

describe("trim points", () => {
  it("keeps the newest whole turns that fit the low-water mark, and drops everything before them", () => {
    const rows = turns(10);
    // 45 tokens fit four messages, but the first of them is an answer: the trim starts at the next user message.
    expect(trimPoint(rows, 45)).toBe(rows[rows.length - 4].id - 1);
    expect(trimPoint(rows, 40)).toBe(rows[rows.length - 4].id - 1);
    // Nothing fits: everything goes; everything fits: only what precedes the rows goes.
    expect(trimPoint(rows, 5)).toBe(rows.at(-1)?.id);
    expect(trimPoint(rows, 1000)).toBe(10);
  });

  it("never starts the kept history at a tool result or an answer", () => {
    const rows: HistoryRow[] = [
      { id: 1, message: { role: "user", content: "u", tokens: 10 } },
      { id: 2, message: { role: "assistant", content: null, tokens: 10 } },
      { id: 3, message: { role: "tool", content: "r", tokens: 10 } },
      { id: 4, message: { role: "assistant", content: "a", tokens: 10 } },
    ];
    expect(trimPoint(rows, 25)).toBe(4);
    expect(trimPoint(rows, 40)).toBe(0);
  });
});

describe("MEMORY.md between trim points", () => {
  const shown = "# Long-term memory\n\n- likes tea";
  const learned = `${shown}\n\n## Learned 2026-12-02\n\n- sister Anna\n- born 1990\n\n## Learned 2026-12-03\n\n- has a cat`;

  it("keeps showing what it showed while only consolidation appended what it learned", () => {
    expect(memoryToShow(shown, shown)).toEqual({ text: shown, store: false });
    expect(memoryToShow(shown, learned)).toEqual({ text: shown, store: false });
  });

  it("shows an edit at once (the owner's or the agent's own), and the file the first time", () => {
    expect(memoryToShow(shown, `${shown}\n- likes coffee`)).toEqual({ text: `${shown}\n- likes coffee`, store: true });
    expect(memoryToShow(shown, `${learned}\n\nmy own note`).store).toBe(true);
    expect(memoryToShow(shown, "# Long-term memory")).toEqual({ text: "# Long-term memory", store: true });
    expect(memoryToShow(shown, "")).toEqual({ text: "", store: true });
    expect(memoryToShow(null, shown)).toEqual({ text: shown, store: true });
    // A heading that only looks like consolidation's, with no facts under it, is an edit.
    expect(memoryToShow(shown, `${shown}\n\n## Learned 2026-12-02`).store).toBe(true);
  });

  it("decides on a megabyte of appended sections without a backtracking blow-up", () => {
    const many = `${shown}${"\n\n## Learned 2026-12-02\n\n- x".repeat(30_000)}`;
    const started = performance.now();
    expect(memoryToShow(shown, many).store).toBe(false);
    expect(memoryToShow(shown, `${many}\n\nnot a fact`).store).toBe(true);
    expect(performance.now() - started).toBeLessThan(500);
  });
});

describe("the summaries at the head of the history", () => {
  it("open the first user message's text, before its own words, and are nothing without entries", () => {
    const block = summariesBlock(["- 2026-12-01: planned a trip"]);
    expect(block).toMatch(
      /^\[pincer: summaries of earlier turns[^\n]*\]\n- 2026-12-01: planned a trip\n\[end of summaries\]\n\n$/,
    );
    expect(withSummaries({ role: "user", content: "hi" }, block)).toEqual({ role: "user", content: `${block}hi` });
    const picture = { type: "image_url" as const, image_url: { url: "data:," } };
    expect(withSummaries({ role: "user", content: [{ type: "text", text: "look" }, picture] }, block)).toEqual({
      role: "user",
      content: [{ type: "text", text: `${block}look` }, picture],
    });
    expect(summariesBlock([])).toBe("");
    expect(withSummaries({ role: "user", content: "hi" }, "")).toEqual({ role: "user", content: "hi" });
  });
});
