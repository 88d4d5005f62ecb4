import { describe, expect, it } from "vitest";
import { openFenceAtEnd, splitMessage } from "./split.js";

function fencesBalanced(chunk: string): boolean {
  return openFenceAtEnd(chunk) === undefined;
}

describe("splitMessage", () => {
  it("keeps a short message whole and drops an empty one", () => {
    expect(splitMessage("hello")).toEqual(["hello"]);
    expect(splitMessage("  \n ")).toEqual([]);
  });

  it("cuts at paragraph boundaries first", () => {
    const paragraphs = Array.from({ length: 30 }, (_, i) => `Paragraph ${i} ${"word ".repeat(20).trim()}.`);
    const text = paragraphs.join("\n\n");
    const chunks = splitMessage(text, 500);
    expect(chunks.length).toBeGreaterThan(1);
    for (const chunk of chunks) {
      expect(chunk.length).toBeLessThanOrEqual(500);
      // Every chunk starts and ends with a whole paragraph.
      expect(chunk).toMatch(/^Paragraph \d+/);
      expect(chunk.endsWith(".")).toBe(true);
    }
    expect(chunks.join("\n\n")).toBe(text);
  });

  it("falls back to line breaks, then spaces, then a hard cut", () => {
    const lines = Array.from({ length: 100 }, (_, i) => `line ${i}`).join("\n");
    const byLine = splitMessage(lines, 100);
    for (const chunk of byLine) {
      expect(chunk.length).toBeLessThanOrEqual(100);
      expect(chunk.split("\n").every((l) => /^line \d+$/.test(l))).toBe(true);
    }
    expect(byLine.join("\n")).toBe(lines);

    const words = "lorem ipsum ".repeat(50).trim();
    const byWord = splitMessage(words, 100);
    expect(byWord.every((c) => c.length <= 100 && !c.startsWith(" ") && !c.endsWith(" "))).toBe(true);
    expect(byWord.join(" ")).toBe(words);

    const blob = "x".repeat(250);
    const hard = splitMessage(blob, 100);
    expect(hard.every((c) => c.length <= 100)).toBe(true);
    expect(hard.join("")).toBe(blob);
  });

  it("never splits a surrogate pair", () => {
    const text = "😀".repeat(200);
    for (const chunk of splitMessage(text, 101)) {
      expect(chunk.length).toBeLessThanOrEqual(101);
      expect([...chunk].every((c) => c === "😀")).toBe(true);
    }
  });

  it("closes a cut code block and reopens it with its language", () => {
    const code = Array.from({ length: 80 }, (_, i) => `const value${i} = ${i};`).join("\n");
    const text = `Here is the file:\n\n\`\`\`ts\n${code}\n\`\`\`\n\nThat is all.`;
    const chunks = splitMessage(text, 400);
    expect(chunks.length).toBeGreaterThan(2);
    for (const chunk of chunks) {
      expect(chunk.length).toBeLessThanOrEqual(400);
      expect(fencesBalanced(chunk)).toBe(true);
    }
    expect(chunks[0].startsWith("Here is the file:")).toBe(true);
    for (const chunk of chunks.slice(1, -1)) expect(chunk.startsWith("```ts\n")).toBe(true);
    expect(chunks.at(-1)?.endsWith("That is all.")).toBe(true);
    // Removing the added fences gives back every line of code, in order.
    const codeLines = chunks
      .join("\n")
      .split("\n")
      .filter((l) => l.startsWith("const "));
    expect(codeLines.join("\n")).toBe(code);
  });

  it("respects the 2000 character default on a long model answer", () => {
    const text = Array.from({ length: 60 }, (_, i) => `## Section ${i}\n\n${"Some prose here. ".repeat(8)}`).join(
      "\n\n",
    );
    const chunks = splitMessage(text);
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.every((c) => c.length <= 2000)).toBe(true);
  });
});

describe("openFenceAtEnd", () => {
  it("tracks backtick and tilde fences and ignores inline code", () => {
    expect(openFenceAtEnd("```py\nprint(1)")).toEqual({ line: "```py", marker: "```" });
    expect(openFenceAtEnd("```py\nprint(1)\n```")).toBeUndefined();
    expect(openFenceAtEnd("~~~\n```\nstill inside")).toEqual({ line: "~~~", marker: "~~~" });
    expect(openFenceAtEnd("````md\n```\nnested\n```\n")).toEqual({ line: "````md", marker: "````" });
    expect(openFenceAtEnd("```inline``` is not a fence")).toBeUndefined();
  });
});
