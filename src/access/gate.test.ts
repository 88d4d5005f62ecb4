import { pino } from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { InboundMessage, OutboundMessage, PersonMessage } from "../bus/types.js";
import { openDatabase } from "../store/sqlite/database.js";
import { openSqliteStore } from "../store/sqlite/sqlite-store.js";
import { createAccessGate } from "./gate.js";

afterEach(() => {
  vi.useRealTimers();
});

function setup() {
  let now = 1_000_000;
  vi.useFakeTimers({ toFake: ["Date"], now });
  const pairing = openSqliteStore(openDatabase(":memory:")).pairing;
  const sent: OutboundMessage[] = [];
  const gate = createAccessGate({
    allowFrom: { telegram: ["42"], discord: ["*"] },
    pairing,
    send: async (msg) => {
      sent.push(msg);
    },
    log: pino({ level: "silent" }),
  });
  const tick = (ms: number) => {
    now += ms;
    vi.setSystemTime(now);
  };
  return { gate, pairing, sent, tick };
}

const msg = (senderId: string, extra: Partial<PersonMessage> = {}): InboundMessage => ({
  id: "7",
  channel: "telegram",
  chatId: senderId,
  senderId,
  senderName: `user ${senderId}`,
  text: "hi",
  media: [],
  isGroup: false,
  mentionsBot: true,
  receivedAt: 0,
  sessionKey: `telegram:${senderId}`,
  ...extra,
});

describe("the access gate", () => {
  it("lets the allowlist, approved users and local channels through without a word", async () => {
    const { gate, pairing, sent } = setup();
    expect(await gate.admit(msg("42"))).toBe(true);
    expect(await gate.admit(msg("5", { channel: "discord" }))).toBe(true);
    expect(await gate.admit(msg("x", { channel: "console" }))).toBe(true);
    expect(
      await gate.admit({ ...msg("cron"), channel: "system", run: { kind: "cron", jobId: "j", scheduledAt: 1 } }),
    ).toBe(true);
    await pairing.approve("telegram", (await pairing.request("telegram", "9", "Nine")).code);
    expect(await gate.admit(msg("9"))).toBe(true);
    expect(sent).toEqual([]);
    expect(await gate.hasAccess("telegram", "9")).toBe(true);
    expect(await gate.hasAccess("telegram", "10")).toBe(false);
  });

  it("answers a stranger in private with one code, repeats the same code only after a while", async () => {
    const { gate, sent, tick } = setup();
    expect(await gate.admit(msg("99"))).toBe(false);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ channel: "telegram", chatId: "99", kind: "notice", replyToId: "7" });
    const code = /code is ([A-Z0-9]{8})/.exec(sent[0].text)?.[1];
    expect(sent[0].text).toContain(`pincer pairing approve telegram ${code}`);
    tick(1000);
    expect(await gate.admit(msg("99"))).toBe(false);
    expect(sent).toHaveLength(1);
    tick(10 * 60_000 - 1000);
    expect(await gate.admit(msg("99"))).toBe(false);
    expect(sent).toHaveLength(2);
    expect(sent[1].text).toContain(`code is ${code}`);
  });

  it("says nothing to a stranger in a group and opens no request there", async () => {
    const { gate, pairing, sent } = setup();
    expect(await gate.admit(msg("66", { chatId: "-100", isGroup: true, sessionKey: "telegram:-100" }))).toBe(false);
    expect(sent).toEqual([]);
    expect(await pairing.pending()).toEqual([]);
  });
});
