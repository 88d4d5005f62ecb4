import { describe, expect, it } from "vitest";
import { inboundFromStored } from "./stored-inbound.js";
import type { InboundMessage } from "./types.js";

const fields = {
  id: "1",
  chatId: "42",
  senderId: "42",
  senderName: "Ann",
  text: "hi",
  media: [],
  isGroup: false,
  mentionsBot: true,
  receivedAt: 5,
  sessionKey: "telegram:42",
};
const stored = (row: object) => inboundFromStored(JSON.stringify(row));

describe("inboundFromStored", () => {
  it("reads today's rows as they are", () => {
    const person: InboundMessage = { ...fields, channel: "telegram", quote: { text: "x", from: "Bo", trust: "other" } };
    const run: InboundMessage = { ...fields, channel: "system", run: { kind: "heartbeat", deliverTo: "telegram:42" } };
    expect(stored(person)).toEqual(person);
    expect(stored(run)).toEqual(run);
  });

  it("reads an older pincer's facts in meta into the typed fields", () => {
    const quoted = { quotedText: "the blue one", quotedFrom: "Bo", quotedTrust: "self" };
    expect(stored({ ...fields, channel: "telegram", meta: { ...quoted, forwardedFrom: "Cy" } })).toEqual({
      ...fields,
      channel: "telegram",
      quote: { text: "the blue one", from: "Bo", trust: "self" },
      forwardedFrom: "Cy",
    });
    // An unknown trust is no one's: untrusted.
    expect(stored({ ...fields, channel: "discord", meta: { ...quoted, quotedTrust: "?" } })).toMatchObject({
      quote: { trust: "other" },
    });
    const helper = { kind: "helper", runId: "h1", status: "done", userId: "42", deliverTo: "telegram:7" };
    expect(stored({ ...fields, channel: "system", meta: helper })).toEqual({
      ...fields,
      channel: "system",
      run: { kind: "helper", runId: "h1", status: "done", userId: "42", deliverTo: "telegram:7" },
    });
    const cron = { kind: "cron", jobId: "j1", runId: "cron:j1:9", scheduledAt: "9", reminder: "stretch" };
    expect(stored({ ...fields, channel: "system", meta: cron })).toMatchObject({
      run: { kind: "cron", jobId: "j1", scheduledAt: 9, reminder: "stretch" },
    });
  });

  it("gives a system row without any facts a run, so no reader meets one without", () => {
    expect(stored({ ...fields, channel: "system" })).toMatchObject({
      run: { kind: "cron", jobId: "", scheduledAt: 0 },
    });
  });
});
