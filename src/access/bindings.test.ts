import { describe, expect, it } from "vitest";
import { type Binding, bindingFor } from "./bindings.js";

const guildMessage = { channel: "discord", chatId: "C1", guildId: "G1" };

describe("bindingFor", () => {
  it("falls back to the account's own agent when no binding matches", () => {
    expect(bindingFor(guildMessage, [], "main")).toBe("main");
    expect(bindingFor(guildMessage, [{ agent: "a", channel: "telegram" }], "shop")).toBe("shop");
    expect(bindingFor(guildMessage, [{ agent: "a", channel: "discord", guild: "G2" }], "main")).toBe("main");
  });

  it("routes a Discord channel to one agent and the rest of its guild to another, in either file order", () => {
    const channel: Binding = { agent: "support", channel: "discord", chat: "C1" };
    const guild: Binding = { agent: "dev", channel: "discord", guild: "G1" };
    for (const bindings of [
      [channel, guild],
      [guild, channel],
    ]) {
      expect(bindingFor(guildMessage, bindings, "main")).toBe("support");
      expect(bindingFor({ ...guildMessage, threadId: "T9" }, bindings, "main")).toBe("support");
      expect(bindingFor({ ...guildMessage, chatId: "C2" }, bindings, "main")).toBe("dev");
      expect(bindingFor({ channel: "discord", chatId: "DM" }, bindings, "main")).toBe("main");
    }
  });

  it("prefers a thread over its chat, a chat over an account, an account over the channel", () => {
    const bindings: Binding[] = [
      { agent: "any", channel: "telegram" },
      { agent: "acct", channel: "telegram", account: "shop" },
      { agent: "chat", channel: "telegram", chat: "-100" },
      { agent: "topic", channel: "telegram", chat: "-100", thread: "7" },
    ];
    expect(bindingFor({ channel: "telegram", chatId: "5" }, bindings, "main")).toBe("any");
    expect(bindingFor({ channel: "telegram", account: "shop", chatId: "5" }, bindings, "main")).toBe("acct");
    expect(bindingFor({ channel: "telegram", account: "shop", chatId: "-100" }, bindings, "main")).toBe("chat");
    expect(bindingFor({ channel: "telegram", chatId: "-100", threadId: "7" }, bindings, "main")).toBe("topic");
    expect(bindingFor({ channel: "telegram", chatId: "-100", threadId: "8" }, bindings, "main")).toBe("chat");
  });

  it("takes the first in the file among equally specific matches, and names the default account 'default'", () => {
    const bindings: Binding[] = [
      { agent: "first", channel: "telegram", chat: "1" },
      { agent: "second", channel: "telegram", chat: "1" },
      { agent: "home", channel: "telegram", account: "default" },
    ];
    expect(bindingFor({ channel: "telegram", chatId: "1" }, bindings, "main")).toBe("first");
    expect(bindingFor({ channel: "telegram", chatId: "2" }, bindings, "main")).toBe("home");
    expect(bindingFor({ channel: "telegram", account: "shop", chatId: "2" }, bindings, "shop")).toBe("shop");
  });

  it("never lets a binding of one account catch another's chat of the same id (two bots, one group)", () => {
    const bindings: Binding[] = [{ agent: "shop", channel: "telegram", account: "shop", chat: "-100" }];
    expect(bindingFor({ channel: "telegram", account: "shop", chatId: "-100" }, bindings, "main")).toBe("shop");
    expect(bindingFor({ channel: "telegram", chatId: "-100" }, bindings, "main")).toBe("main");
  });
});
