import { describe, expect, it } from "vitest";
import { routeTaps, usableButtons, withButtonLines } from "./buttons.js";
import type { ButtonTap } from "./types.js";

describe("the buttons a channel shows", () => {
  it("leaves out what a platform would refuse the whole message for, and cuts labels by characters", () => {
    const emoji = "👍".repeat(70);
    const rows = usableButtons([
      [
        { label: "ok", data: "b:0.0" },
        { label: " ", data: "b:0.1" },
        { label: "no data", data: "" },
        { label: "too much", data: "é".repeat(33) }, // 66 bytes
        { label: emoji, data: "b:0.4" },
      ],
      [],
      ...Array.from({ length: 6 }, (_, r) => Array.from({ length: 7 }, (_, c) => ({ label: `${r}.${c}`, data: "d" }))),
    ]);
    expect(rows[0]).toEqual([
      { label: "ok", data: "b:0.0" },
      { label: "👍".repeat(64), data: "b:0.4" },
    ]);
    expect(rows).toHaveLength(5);
    expect(rows.slice(1).every((row) => row.length === 5)).toBe(true);
    expect(usableButtons(undefined)).toEqual([]);
  });

  it("writes them as [Label] lines for a channel without buttons", () => {
    const buttons = [
      [
        { label: "Yes", data: "b:0.0" },
        { label: "No", data: "b:0.1" },
      ],
      [{ label: "Later", data: "b:1.0" }],
    ];
    expect(withButtonLines({ text: "Go?", buttons })).toBe("Go?\n[Yes] [No]\n[Later]");
    expect(withButtonLines({ text: "plain" })).toBe("plain");
  });
});

const tap = (data: string): ButtonTap => ({
  id: "1",
  channel: "telegram",
  chatId: "1",
  senderId: "2",
  senderName: "Ann",
  isGroup: false,
  messageId: "3",
  data,
  receivedAt: 0,
});

describe("routing taps by their data's prefix", () => {
  it("hands each tap to its prefix's handler; anything else, or a route switched off, has expired", async () => {
    const route = routeTaps({ "a:": async (t) => ({ text: `approval ${t.data}` }), "b:": undefined });
    expect(await route(tap("a:x:once"))).toEqual({ text: "approval a:x:once" });
    expect(await route(tap("b:1"))).toEqual({ text: "This button has expired." });
    expect(await route(tap("zzz"))).toEqual({ text: "This button has expired." });
  });
});
