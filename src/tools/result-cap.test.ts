import { describe, expect, it } from "vitest";
import { safeSlice } from "../text.js";
import { capToolResult } from "./result-cap.js";

describe("capToolResult", () => {
  it("leaves short results alone", () => {
    expect(capToolResult("short", 100)).toBe("short");
  });

  it("cuts a 5 MB result to the cap, keeping head and tail, with a note of what was cut and how to read more", () => {
    const big = `HEAD${"x".repeat(5 * 1024 * 1024)}TAIL`;
    const out = capToolResult(big, 16_000);
    expect(out.startsWith("HEAD")).toBe(true);
    expect(out.endsWith("TAIL")).toBe(true);
    expect(out.length).toBeLessThan(16_400);
    expect(out).toMatch(/pincer cut 5,2\d\d,\d\d\d of 5,242,888 characters here/);
    expect(out).toContain("read_file with offset and limit");
  });

  it("never leaves half an emoji", () => {
    const out = capToolResult("😀".repeat(10_000), 1001);
    expect(out).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/);
    expect(out).not.toMatch(/(?<![\ud800-\udbff])[\udc00-\udfff]/);
    expect(safeSlice("a😀b", 0, 2)).toBe("a");
    expect(safeSlice("a😀b", 2, 4)).toBe("b");
  });
});
