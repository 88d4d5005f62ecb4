import { describe, expect, it } from "vitest";
import { agentOf, agentSessionKey, parseSessionKey, quotation, sessionKeyOf } from "./types.js";

describe("session keys name the agent and the bot", () => {
  it("leave the main agent's and the default bot's keys as they always were", () => {
    expect(agentSessionKey("main", sessionKeyOf("telegram", "42"))).toBe("telegram:42");
    expect(parseSessionKey("discord:1:thread:2")).toEqual({
      agent: "main",
      channel: "discord",
      chatId: "1",
      threadId: "2",
      account: undefined,
    });
  });

  it("put another agent first and another bot beside its channel, and read both back", () => {
    const key = agentSessionKey("shop", sessionKeyOf("telegram", "-100", "7", "sales"));
    expect(key).toBe("shop/telegram@sales:-100:thread:7");
    expect(parseSessionKey(key)).toEqual({
      agent: "shop",
      channel: "telegram",
      account: "sales",
      chatId: "-100",
      threadId: "7",
    });
    expect(agentOf(key)).toBe("shop");
  });

  it("never read a main chat whose id has a slash as another agent's", () => {
    expect(agentOf("console:a/b")).toBe("main");
    expect(parseSessionKey("console:a/b")).toMatchObject({ agent: "main", chatId: "a/b" });
    expect(agentOf("web:x")).toBe("main");
    expect(parseSessionKey("Shop/telegram:1")).toBeUndefined();
  });
});

describe("quotation", () => {
  it("quotes the start of the message replied to on one line", () => {
    expect(quotation("look at\nthis", "bob", "other")).toEqual({
      quote: { text: "look at this", from: "bob", trust: "other" },
    });
    expect(quotation("x".repeat(400), "bob", "bot").quote?.text).toBe(`${"x".repeat(300)}…`);
    expect(quotation("", "bob", "self")).toEqual({});
  });
});
