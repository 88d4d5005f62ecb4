import { describe, expect, it } from "vitest";
import { cleanContent, conversationOf, type MessageFacts, whyIgnored } from "./policy.js";

const policy = { botId: "100", allowBots: false, allowedChannels: [] as string[] };
const guildMessage: MessageFacts = {
  authorId: "7",
  authorIsBot: false,
  guildId: "1",
  channelId: "20",
  mentionsBot: true,
  repliesToBot: false,
};

describe("whyIgnored", () => {
  it("ignores the bot's own messages, and other bots unless allowed", () => {
    expect(whyIgnored({ ...guildMessage, authorId: "100", authorIsBot: true }, { ...policy, allowBots: true })).toBe(
      "own message",
    );
    expect(whyIgnored({ ...guildMessage, authorIsBot: true }, policy)).toBe("bot");
    expect(whyIgnored({ ...guildMessage, authorIsBot: true }, { ...policy, allowBots: true })).toBeUndefined();
  });

  it("answers in a server only when mentioned or replied to", () => {
    expect(whyIgnored(guildMessage, policy)).toBeUndefined();
    expect(whyIgnored({ ...guildMessage, mentionsBot: false }, policy)).toBe("not addressed");
    expect(whyIgnored({ ...guildMessage, mentionsBot: false, repliesToBot: true }, policy)).toBeUndefined();
  });

  it("answers every DM", () => {
    expect(whyIgnored({ ...guildMessage, guildId: undefined, mentionsBot: false }, policy)).toBeUndefined();
  });

  it("limits servers to the allowed channels, threads by their parent", () => {
    const limited = { ...policy, allowedChannels: ["30"] };
    expect(whyIgnored(guildMessage, limited)).toBe("channel not allowed");
    expect(whyIgnored({ ...guildMessage, channelId: "30" }, limited)).toBeUndefined();
    expect(whyIgnored({ ...guildMessage, channelId: "31", parentId: "30" }, limited)).toBeUndefined();
    // DMs are governed by the user allowlist, not the channel list.
    expect(whyIgnored({ ...guildMessage, guildId: undefined }, limited)).toBeUndefined();
  });
});

describe("conversationOf", () => {
  it("keys a thread under its parent channel and a channel by itself", () => {
    expect(conversationOf({ channelId: "20" })).toEqual({ chatId: "20", sessionKey: "discord:20" });
    expect(conversationOf({ channelId: "31", parentId: "30" })).toEqual({
      chatId: "30",
      threadId: "31",
      sessionKey: "discord:30:thread:31",
    });
  });
});

describe("cleanContent", () => {
  it("strips the bot's mention and names other users", () => {
    const names = new Map([["7", "ada"]]);
    expect(cleanContent("<@100> hello", "100", names)).toBe("hello");
    expect(cleanContent("hey <@!100>, ask <@7> about <@8>", "100", names)).toBe("hey , ask @ada about <@8>");
    expect(cleanContent("<@100>", "100", names)).toBe("");
    // Issue 36, point 9: the user's own spacing stays (pasted code, YAML).
    const yaml = "services:\n  web:\n    image: nginx\n\tports:  [80]";
    expect(cleanContent(`<@100> fix this:\n${yaml}`, "100", names)).toBe(`fix this:\n${yaml}`);
    expect(cleanContent(`<@100>\n${yaml}`, "100", names)).toBe(yaml);
  });
});
