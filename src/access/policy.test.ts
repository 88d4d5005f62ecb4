import { describe, expect, it } from "vitest";
import type { InboundMessage } from "../bus/types.js";
import { isNamedOwner, isOwnersChat, type MemorySharing, personSpace, seesOwnerMemory, spaceOf } from "./policy.js";

const from = (channel: InboundMessage["channel"], senderId: string, extra: Partial<InboundMessage> = {}) =>
  ({
    id: "1",
    channel,
    chatId: senderId,
    senderId,
    senderName: "x",
    text: "",
    media: [],
    isGroup: false,
    mentionsBot: true,
    receivedAt: 0,
    sessionKey: `${channel}:${senderId}`,
    ...extra,
  }) as InboundMessage;

const sharing: MemorySharing = {
  allowFrom: { telegram: ["42", "*"], discord: ["7"] },
  shareWithGroups: false,
  shareWithGuests: false,
};

describe("who sees the owner's MEMORY.md", () => {
  it("the owner's own chats: local ones and people named in the allowlist, not those let in by * or pairing", () => {
    expect(seesOwnerMemory(from("console", "me"), sharing)).toBe(true);
    expect(seesOwnerMemory(from("web", "main"), sharing)).toBe(true);
    expect(seesOwnerMemory(from("telegram", "42"), sharing)).toBe(true);
    expect(seesOwnerMemory(from("discord", "7", { chatId: "900", sessionKey: "discord:900" }), sharing)).toBe(true);
    expect(seesOwnerMemory(from("telegram", "43"), sharing)).toBe(false);
    expect(seesOwnerMemory(from("discord", "8"), sharing)).toBe(false);
  });

  it("a group only with shareWithGroups, whoever speaks in it; a guest only with shareWithGuests", () => {
    const group = from("telegram", "42", { chatId: "-100", isGroup: true, sessionKey: "telegram:-100" });
    expect(seesOwnerMemory(group, sharing)).toBe(false);
    expect(seesOwnerMemory(group, { ...sharing, shareWithGroups: true })).toBe(true);
    expect(seesOwnerMemory(from("telegram", "43"), { ...sharing, shareWithGuests: true })).toBe(true);
    expect(isOwnersChat(group, sharing.allowFrom)).toBe(false);
  });

  it("a scheduled run or a helper's result speaks for the person it was set up by; the heartbeat is the owner's", () => {
    const run = (userId?: string) =>
      from("system", "cron", {
        chatId: "42",
        sessionKey: "telegram:42",
        run: { kind: "cron", jobId: "j", scheduledAt: 1, userId },
      });
    expect(seesOwnerMemory(run("42"), sharing)).toBe(true);
    expect(seesOwnerMemory(run("43"), sharing)).toBe(false);
    expect(seesOwnerMemory(run(), sharing)).toBe(false);
    expect(seesOwnerMemory(from("system", "heartbeat", { sessionKey: "system:heartbeat" }), sharing)).toBe(true);
  });
});

describe("who is the owner (role owner: /model, everyone's usage, the whole workspace)", () => {
  it("someone named in the allowlist or a local channel; not someone approved by pairing, nor everyone * lets in", () => {
    const owner = (channel: InboundMessage["channel"], senderId: string) =>
      isNamedOwner(channel, senderId, { telegram: ["42", "*"], discord: ["42", "*"] });
    expect(owner("telegram", "42")).toBe(true);
    expect(owner("telegram", "43")).toBe(false);
    expect(owner("discord", "42")).toBe(true);
    expect(isNamedOwner("discord", "42", {})).toBe(false);
    expect(owner("web", "anyone")).toBe(true);
    expect(owner("console", "user")).toBe(true);
  });
});

describe("a person's space", () => {
  it("is the whole workspace for the owner and pincer's own runs, else the person's folder that /forget deletes", () => {
    expect(spaceOf({ person: { id: "telegram:42", role: "owner" } }, "/w")).toBe("/w");
    expect(spaceOf({}, "/w")).toBe("/w");
    const guest = spaceOf({ person: { id: "shop/discord:5", role: "guest" } }, "/w");
    expect(guest).toBe("/w/people/shop%2Fdiscord%3A5");
    expect(personSpace("/w", "shop/discord:5")).toBe(guest);
  });
});
