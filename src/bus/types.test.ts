import { describe, expect, it } from "vitest";
import { quoteMeta } from "./types.js";

describe("quoteMeta", () => {
  it("quotes the start of the message replied to on one line", () => {
    expect(quoteMeta("look at\nthis", "bob", "other")).toEqual({
      quotedText: "look at this",
      quotedFrom: "bob",
      quotedTrust: "other",
    });
    expect(quoteMeta("x".repeat(400), "bob", "bot").quotedText).toBe(`${"x".repeat(300)}…`);
    expect(quoteMeta("", "bob", "self")).toEqual({});
  });
});
