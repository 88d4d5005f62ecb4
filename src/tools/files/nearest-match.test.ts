import { describe, expect, it } from "vitest";
import { matchesIgnoringWhitespace, nearestMatch } from "./nearest-match.js";

const file = ["function add(a, b) {", "  return a + b;", "}", "", "function sub(a, b) {", "  return a - b;", "}"].join(
  "\n",
);

describe("nearestMatch", () => {
  it("finds the closest stretch of as many lines as the needle has", () => {
    expect(nearestMatch(file, "function sub(a, c) {\n  return a - c;")).toEqual({
      startLine: 5,
      endLine: 6,
      text: "function sub(a, b) {\n  return a - b;",
      edits: 2,
    });
  });

  it("prefers the stretch with the fewest edits among similar candidates", () => {
    expect(nearestMatch(file, "  return a * b;\n}")).toMatchObject({ startLine: 2, endLine: 3, edits: 1 });
    expect(nearestMatch(file, "  return a / b;\n}\n")).toMatchObject({ startLine: 2, endLine: 3, edits: 1 });
  });

  it("gives nothing for a blank needle or a needle longer than the file", () => {
    expect(nearestMatch(file, "   ")).toBeUndefined();
    expect(nearestMatch("one line", "a\nb\nc")).toBeUndefined();
  });
});

describe("matchesIgnoringWhitespace", () => {
  it("spots indentation and line-break differences", () => {
    expect(matchesIgnoringWhitespace(file, "function add(a, b) {\n    return a + b;")).toBe(true);
    expect(matchesIgnoringWhitespace(file, "function add(a, b) { return a * b; }")).toBe(false);
  });
});
