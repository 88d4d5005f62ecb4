import { describe, expect, it } from "vitest";
import { LineSplitter } from "./stdio-transport.js";

describe("LineSplitter", () => {
  it("returns complete lines across chunks, CRLF included", () => {
    const lines = new LineSplitter(100);
    expect(lines.push(Buffer.from('{"a":'))).toEqual([]);
    expect(lines.push(Buffer.from('1}\r\n{"b":2}\n{"c"'))).toEqual(['{"a":1}', '{"b":2}']);
    expect(lines.push(Buffer.from(":3}\n"))).toEqual(['{"c":3}']);
  });

  it("keeps multi-byte characters split between chunks intact", () => {
    const lines = new LineSplitter(100);
    const bytes = Buffer.from("äö\n");
    expect([...lines.push(bytes.subarray(0, 1)), ...lines.push(bytes.subarray(1))]).toEqual(["äö"]);
  });

  it("throws once an unfinished line passes the limit, then starts clean", () => {
    const lines = new LineSplitter(10);
    expect(lines.push(Buffer.from("123456"))).toEqual([]);
    expect(() => lines.push(Buffer.from("789012"))).toThrow(/over 10 bytes/);
    expect(lines.push(Buffer.from("ok\n"))).toEqual(["ok"]);
    expect(() => lines.push(Buffer.from(`${"x".repeat(11)}\n`))).toThrow(/over 10 bytes/);
  });
});
