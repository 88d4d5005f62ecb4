import { describe, expect, it } from "vitest";
import { looksBinary } from "../files/binary.js";
import { formatExecResult, printable, splitBudget, truncate } from "./output.js";

const bytes = (text: string) => new TextEncoder().encode(text);
const none = new Uint8Array();

describe("printable", () => {
  it("keeps ordinary text, tabs, newlines and UTF-8", () => {
    expect(printable(bytes("a\tb\nüñï 🎉\n"))).toBe("a\tb\nüñï 🎉\n");
  });

  it("drops colour codes, turns carriage returns into newlines and escapes other control bytes", () => {
    expect(printable(bytes("\x1b[31mred\x1b[0m\r\n10%\r20%\x07"))).toBe("red\n10%\n20%\\x07");
  });

  it("summarises binary output instead of showing it", () => {
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48]);
    expect(printable(png)).toBe(
      "(binary output, 14 bytes, not shown; pipe it through `xxd | head` or `base64` to see it)",
    );
    expect(looksBinary(new Uint8Array(200).map((_, i) => 0x80 + (i % 60)))).toBe(true);
    expect(looksBinary(bytes("plain text with a few \x01 odd bytes"))).toBe(false);
  });
});

describe("truncate and splitBudget", () => {
  it("says how many characters were cut", () => {
    expect(truncate("abcdef", 4)).toBe("abcd\n… (truncated, 2 more chars)");
    expect(truncate("abc", 4)).toBe("abc");
  });

  it("gives stderr at least half the budget when stdout floods", () => {
    expect(splitBudget(10, 5, 100)).toEqual([10, 5]);
    expect(splitBudget(1000, 30, 100)).toEqual([70, 30]);
    expect(splitBudget(1000, 1000, 100)).toEqual([50, 50]);
    expect(splitBudget(20, 1000, 100)).toEqual([20, 80]);
  });
});

describe("formatExecResult", () => {
  it("shows stdout, marked stderr and a non-zero exit code", () => {
    expect(formatExecResult({ stdout: bytes("out\n"), stderr: bytes("oops\n"), exitCode: 2 }, 100)).toBe(
      "out\nSTDERR:\noops\nExit code: 2",
    );
  });

  it("leaves out a zero exit code and says when there was no output at all", () => {
    expect(formatExecResult({ stdout: bytes("hi"), stderr: none, exitCode: 0 }, 100)).toBe("hi");
    expect(formatExecResult({ stdout: none, stderr: none, exitCode: 0 }, 100)).toBe("(no output)");
  });

  it("caps the combined output at the limit with a note per cut stream", () => {
    const text = formatExecResult({ stdout: bytes("x".repeat(500)), stderr: bytes("e".repeat(30)), exitCode: 1 }, 100);
    expect(text).toContain(`${"x".repeat(70)}\n… (truncated, 430 more chars)`);
    expect(text).toContain(`STDERR:\n${"e".repeat(30)}`);
    expect(text.replace(/[^xe]/g, "").length).toBeLessThanOrEqual(100 + "truncated".length);
  });

  it("says the process group was killed on timeout, cancel and overflow", () => {
    expect(formatExecResult({ stdout: bytes("partial"), stderr: none, timedOutAfterSeconds: 5 }, 100)).toBe(
      "partial\nTimed out after 5 s: the command and every process it started were killed.",
    );
    expect(formatExecResult({ stdout: none, stderr: none, cancelled: true }, 100)).toContain("Cancelled");
    expect(formatExecResult({ stdout: bytes("y\n"), stderr: none, overflowBytes: 1024 }, 100)).toContain(
      "output passed 1024 bytes",
    );
    expect(formatExecResult({ stdout: none, stderr: none, signal: "SIGKILL" }, 100)).toBe("Killed by SIGKILL.");
  });
});
