import { describe, expect, it } from "vitest";
import { quotation } from "./types.js";

describe("quotation", () => {
  it("quotes the start of the message replied to on one line", () => {
    expect(quotation("look at\nthis", "bob", "other")).toEqual({
      quote: { text: "look at this", from: "bob", trust: "other" },
    });
    expect(quotation("x".repeat(400), "bob", "bot").quote?.text).toBe(`${"x".repeat(300)}…`);
    expect(quotation("", "bob", "self")).toEqual({});
  });
});
