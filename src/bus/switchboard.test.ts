import { describe, expect, it } from "vitest";
import { inbound } from "../../test/helpers/store-conformance.js";
import { openSqliteStore } from "../store/sqlite/sqlite-store.js";
import { Switchboard } from "./switchboard.js";

describe("Switchboard.publishInbound", () => {
  it("asks the gate once for a message a channel screened, filled in and published; again for any other object", async () => {
    const asked: string[] = [];
    const bus = new Switchboard({
      journal: openSqliteStore(":memory:").journal,
      gate: async (msg) => {
        asked.push(msg.text);
        return msg.text === "stranger" ? undefined : { ...msg, sessionKey: "main:telegram:42" };
      },
    });
    const screened = await bus.screenInbound(inbound("42", "hi"));
    if (!screened) throw new Error("the gate let the message in");
    screened.text = "hi, with the file's note";
    expect(await bus.publishInbound(screened)).toBe(true);
    expect(asked).toEqual(["hi"]);
    // A copy with the same fields is not what the gate returned: screened again, and here refused.
    expect(await bus.publishInbound({ ...screened, id: "2", text: "stranger" })).toBe(false);
    expect(asked).toEqual(["hi", "stranger"]);
    expect(bus.inbound.size).toBe(1);
  });
});
