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
  const { pairing, people } = openSqliteStore(openDatabase(":memory:"));
  const sent: OutboundMessage[] = [];
  const access = createAccessGate({
    allowFrom: { telegram: ["42"], discord: ["*"], "telegram@shop": ["7"] },
    agentFor: (m) => (m.account === "shop" || m.chatId === "-100" ? "shop" : "main"),
    pairing,
    people,
    roles: { roles: {}, people: { defaultRole: "guest" } },
    log: pino({ level: "silent" }),
  });
  const gate = { ...access, admit: (msg: InboundMessage) => access.admit(msg, async (out) => void sent.push(out)) };
  const tick = (ms: number) => {
    now += ms;
    vi.setSystemTime(now);
  };
  return { gate, pairing, people, sent, tick };
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
    expect(await gate.admit(msg("42"))).toBeDefined();
    expect(await gate.admit(msg("5", { channel: "discord" }))).toBeDefined();
    expect(await gate.admit(msg("x", { channel: "console" }))).toBeDefined();
    expect(
      await gate.admit({ ...msg("cron"), channel: "system", run: { kind: "cron", jobId: "j", scheduledAt: 1 } }),
    ).toBeDefined();
    await pairing.approve("telegram", (await pairing.request("telegram", "9", "Nine")).code);
    expect(await gate.admit(msg("9"))).toBeDefined();
    expect(sent).toEqual([]);
    expect(await gate.hasAccess("telegram", "9")).toBe(true);
    expect(await gate.hasAccess("telegram", "10")).toBe(false);
  });

  it("answers a stranger in private with one code, repeats the same code only after a while", async () => {
    const { gate, sent, tick } = setup();
    expect(await gate.admit(msg("99"))).toBeUndefined();
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ channel: "telegram", chatId: "99", kind: "notice", replyToId: "7" });
    const code = /code is ([A-Z0-9]{8})/.exec(sent[0].text)?.[1];
    expect(sent[0].text).toContain(`pincer pairing approve telegram ${code}`);
    tick(1000);
    expect(await gate.admit(msg("99"))).toBeUndefined();
    expect(sent).toHaveLength(1);
    tick(10 * 60_000 - 1000);
    expect(await gate.admit(msg("99"))).toBeUndefined();
    expect(sent).toHaveLength(2);
    expect(sent[1].text).toContain(`code is ${code}`);
  });

  it("says nothing to a stranger in a group and opens no request there", async () => {
    const { gate, pairing, sent } = setup();
    expect(await gate.admit(msg("66", { chatId: "-100", isGroup: true, sessionKey: "telegram:-100" }))).toBeUndefined();
    expect(sent).toEqual([]);
    expect(await pairing.pending()).toEqual([]);
  });

  it("keeps each bot's allowlist and pairing its own, and answers a stranger through the bot they wrote to", async () => {
    const { gate, pairing, sent } = setup();
    const shop = { account: "shop", sessionKey: "telegram@shop:42" };
    // 42 is the default bot's owner, a stranger to the shop's bot; 7 the other way round.
    expect(await gate.admit(msg("42", shop))).toBeUndefined();
    expect(sent[0]).toMatchObject({ channel: "telegram", account: "shop", chatId: "42" });
    const code = /code is ([A-Z0-9]{8})/.exec(sent[0].text)?.[1] as string;
    expect(sent[0].text).toContain(`pincer pairing approve telegram@shop ${code}`);
    expect(await gate.admit(msg("7"))).toBeUndefined();
    expect(await pairing.approve("telegram", code)).toBeUndefined();
    await pairing.approve("telegram@shop", code);
    expect(await gate.admit(msg("42", shop))).toBeDefined();
    expect(await gate.hasAccess("telegram@shop", "42")).toBe(true);
    expect(await gate.hasAccess("telegram@shop", "9")).toBe(false);
  });

  it("addresses a platform's message to its agent's conversation, by the bot and the chat", async () => {
    const { gate } = setup();
    expect((await gate.admit(msg("42")))?.sessionKey).toBe("telegram:42");
    expect((await gate.admit(msg("7", { account: "shop", sessionKey: "telegram@shop:7" })))?.sessionKey).toBe(
      "shop/telegram@shop:7",
    );
    const topic = msg("42", { chatId: "-100", isGroup: true, sessionKey: "telegram:-100:thread:3" });
    expect((await gate.admit(topic))?.sessionKey).toBe("shop/telegram:-100:thread:3");
    // A key a producer made up is never trusted: the gate builds it again from who wrote where.
    expect((await gate.admit(msg("42", { sessionKey: "shop/telegram:42" })))?.sessionKey).toBe("telegram:42");
    expect((await gate.admit(msg("x", { channel: "web", sessionKey: "shop/web:abc" })))?.sessionKey).toBe(
      "shop/web:abc",
    );
  });
});

describe("people at the gate", () => {
  it("finds the person behind each message once, with the owner's, the default or a set role", async () => {
    const { gate, pairing } = setup();
    expect((await gate.admit(msg("42")))?.person).toEqual({ id: "telegram:42", role: "owner" });
    // Let in by `*` or by pairing: the default role.
    expect((await gate.admit(msg("5", { channel: "discord", sessionKey: "discord:5" })))?.person).toEqual({
      id: "discord:5",
      role: "guest",
    });
    await pairing.approve("telegram", (await pairing.request("telegram", "9", "Nine")).code);
    expect((await gate.admit(msg("9")))?.person).toEqual({ id: "telegram:9", role: "guest" });
    // A person of the shop's agent is not the main agent's, though the same human.
    const shop = await gate.admit(msg("7", { account: "shop", sessionKey: "telegram@shop:7" }));
    expect(shop?.person).toEqual({ id: "shop/telegram@shop:7", role: "owner" });
    expect((await gate.admit(msg("x", { channel: "console", sessionKey: "console:x" })))?.person?.role).toBe("owner");
    expect(await gate.admit(msg("66"))).toBeUndefined();
  });

  it("joins an account to a person by their code; the owner's account never joins a guest by the guest's code", async () => {
    const { gate, people } = setup();
    const guest = (await gate.admit(msg("5", { channel: "discord", sessionKey: "discord:5" }))) as InboundMessage;
    const owner = (await gate.admit(msg("42"))) as InboundMessage;
    const { code } = await people.offerLink((guest.person as { id: string }).id);
    // Mallory the guest hands the owner her code: sent from the owner's account, it is refused, and stays unused.
    expect(await gate.link(owner, code)).toEqual({ refused: "refused" });
    const { code: owners } = await people.offerLink("telegram:42");
    expect(await gate.link(guest, owners)).toMatchObject({ joined: { id: "telegram:42" } });
    // Linked, the guest's account speaks with the owner's rights: it is the owner's own.
    expect((await gate.admit(msg("5", { channel: "discord", sessionKey: "discord:5" })))?.person).toEqual({
      id: "telegram:42",
      role: "owner",
    });
  });

  it("an account given the owner's role by pincer people role never joins a guest either", async () => {
    const { gate, people } = setup();
    const guest = (await gate.admit(msg("5", { channel: "discord", sessionKey: "discord:5" }))) as InboundMessage;
    await gate.admit(msg("6", { channel: "discord", sessionKey: "discord:6" }));
    await people.setRole("discord:6", "owner");
    const promoted = (await gate.admit(msg("6", { channel: "discord", sessionKey: "discord:6" }))) as InboundMessage;
    expect(promoted.person?.role).toBe("owner");
    const { code } = await people.offerLink((guest.person as { id: string }).id);
    expect(await gate.link(promoted, code)).toEqual({ refused: "refused" });
    expect((await gate.admit(msg("5", { channel: "discord", sessionKey: "discord:5" })))?.person?.role).toBe("guest");
  });
});
