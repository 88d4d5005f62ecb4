import { describe, expect, it } from "vitest";
import { routeTaps } from "./tap-router.js";
import type { ButtonTap } from "./types.js";

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
