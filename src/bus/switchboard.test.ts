import { describe, expect, it } from "vitest";
import { openSqliteStore } from "../store/sqlite/sqlite-store.js";
import { Switchboard } from "./switchboard.js";
import type { InboundMessage } from "./types.js";

const message = (id: string): InboundMessage => ({
  channel: "telegram",
  id,
  chatId: "42",
  senderId: "42",
  senderName: "Ann",
  text: "hi",
  media: [],
  isGroup: false,
  mentionsBot: true,
  receivedAt: 5,
  sessionKey: "telegram:42",
});

describe("Switchboard.publishInbound", () => {
  it("asks the gate once for a message a channel screened, filled in and published; again for any other object", async () => {
    const asked: string[] = [];
    const bus = new Switchboard({
      journal: openSqliteStore(":memory:").journal,
      gate: async (msg) => {
        asked.push(msg.id);
        return msg.text === "stranger" ? undefined : { ...msg, sessionKey: "main:telegram:42" };
      },
    });
    const screened = await bus.screenInbound(message("1"));
    if (!screened) throw new Error("the gate let the message in");
    screened.text = "hi, with the file's note";
    expect(await bus.publishInbound(screened)).toBe(true);
    expect(asked).toEqual(["1"]);
    // A copy with the same fields is not what the gate returned: screened again, and here refused.
    expect(await bus.publishInbound({ ...screened, id: "2", text: "stranger" })).toBe(false);
    expect(asked).toEqual(["1", "2"]);
    expect(bus.inbound.size).toBe(1);
  });
});
