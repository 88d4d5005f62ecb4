/**
 * Several Telegram bots in one pincer (config `accounts`): real grammy clients against two fake Bot API servers behind
 * one API root. Two bots in one group are two conversations; each bot has its own allowlist and pairing and answers
 * through itself; a reminder set through one bot comes back through that bot. Every scenario runs on both engines: the
 * SQLite file, and PostgreSQL (clustered mode in one process, each bot's connection a role of its own).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createTelegramChannel } from "../channels/telegram/telegram-channel.js";
import type { App } from "../src/app.js";
import { mediaDir } from "../src/paths.js";
import { type FakeOpenAI, startFakeOpenAI } from "./fakes/openai-server.js";
import { type FakeTelegram, startFakeTelegram } from "./fakes/telegram-server.js";
import { tempHome, testApp } from "./helpers/app.js";
import { startBotRouter } from "./helpers/bot-router.js";
import { ENGINES, engineEnv } from "./helpers/engines.js";
import { fakeModelForFile } from "./helpers/model.js";
import { FAST_TIMING, groupChat, message, privateChat, user } from "./helpers/telegram.js";
import { until } from "./helpers/until.js";

const SHOP_TOKEN = "654321:AAH-fake-shop-token_for_tests_012345";
const model = fakeModelForFile();

/** The conversation a request to the model is for, from its system prompt. */
const conversationOf = (request: (typeof model.requests)[number]) =>
  /Conversation: (\S+)/.exec(String(request.messages[0]?.content))?.[1] ?? "";

describe.each(ENGINES)("on %s", (engine) => {
  const database = engineEnv(engine);
  let home: FakeTelegram;
  let shop: FakeTelegram;
  let router: Awaited<ReturnType<typeof startBotRouter>>;
  let app: App | undefined;

  beforeAll(async () => {
    home = await startFakeTelegram();
    shop = await startFakeTelegram({ token: SHOP_TOKEN, bot: { username: "shop_bot", first_name: "Shop" } });
    router = await startBotRouter({ [home.token]: home.apiRoot, [SHOP_TOKEN]: shop.apiRoot });
  });
  afterAll(async () => {
    await router.close();
    await Promise.all([home.close(), shop.close()]);
  });
  afterEach(async () => {
    await app?.stop();
    app = undefined;
    home.sent.length = 0;
    shop.sent.length = 0;
    model.respond(() => ({ content: "ok" }));
  });

  /** pincer with both bots: TELEGRAM_BOT_TOKEN's lets 42 and 7 in, the shop's (accounts.telegram.shop) only 7. */
  async function start(more: object = {}, env: Record<string, string> = {}): Promise<App> {
    const dir = tempHome("pincer-accounts-");
    const configFile = join(dir, "config.json");
    const shopBot = { tokenEnv: "TG_SHOP", allowFrom: ["7"], ...("agents" in more ? { agent: "shop" } : {}) };
    writeFileSync(configFile, JSON.stringify({ accounts: { telegram: { shop: shopBot } }, ...more }));
    const started = await testApp(model.url, dir, {
      PINCER_CONFIG: configFile,
      TELEGRAM_BOT_TOKEN: home.token,
      TELEGRAM_API_ROOT: router.url,
      TELEGRAM_ALLOW_FROM: "42,7",
      TG_SHOP: SHOP_TOKEN,
      ...(await database.env()),
      ...env,
    });
    const log = pino({ level: "silent" });
    const channels = started.config.accounts.map((account) =>
      createTelegramChannel({
        config: started.config,
        bus: started.bus,
        mediaDir: mediaDir(started.config.home),
        log,
        timing: FAST_TIMING,
        account,
      }),
    );
    expect(channels.map((c) => c.name)).toEqual(["telegram", "telegram@shop"]);
    await started.start(channels);
    app = started;
    return started;
  }

  describe("two Telegram bots in one pincer", () => {
    it("are two conversations in the same group, each answered through its own bot", async () => {
      const started = await start();
      model.respond((request) => ({ content: `answer in ${conversationOf(request)}` }));
      const group = groupChat(-100);
      // The same group message reaches both bots with the same message id.
      home.pushUpdate(message(group, user(7), { message_id: 5, text: "@pincer_test_bot @shop_bot hello" }));
      shop.pushUpdate(message(group, user(7), { message_id: 5, text: "@pincer_test_bot @shop_bot hello" }));
      await until(() => home.sent.length > 0 && shop.sent.length > 0, "both bots to answer");
      expect(home.sent.map((m) => [m.chatId, m.text])).toEqual([["-100", "answer in telegram:-100"]]);
      expect(shop.sent.map((m) => [m.chatId, m.text])).toEqual([["-100", "answer in telegram@shop:-100"]]);
      const conversations = await started.store.dashboard.conversations();
      expect(conversations.map((c) => c.sessionKey).sort()).toEqual(["telegram:-100", "telegram@shop:-100"]);
    });

    it("keep their own allowlists and pairing: a stranger to one bot gets its code from that bot", async () => {
      const started = await start();
      shop.pushUpdate(message(privateChat(42), user(42), { text: "hi shop" }));
      await until(() => shop.sent.find((m) => m.chatId === "42"), "the shop bot's pairing code");
      const notice = shop.sent.find((m) => m.chatId === "42")?.text ?? "";
      const code = /code is ([A-Z0-9]{8})/.exec(notice)?.[1] as string;
      expect(notice).toContain(`pincer pairing approve telegram@shop ${code}`);
      expect(home.sent.filter((m) => m.chatId === "42")).toEqual([]);
      expect(model.requests).toEqual([]);
      // Approved on the default bot, 42 is still a stranger to the shop's.
      expect(await started.store.pairing.approve("telegram", code)).toBeUndefined();
      await started.store.pairing.approve("telegram@shop", code);
      shop.pushUpdate(message(privateChat(42), user(42), { text: "hi again" }));
      await until(() => shop.sent.some((m) => m.chatId === "42" && m.text === "ok"), "the shop bot's answer");
      expect(home.sent.filter((m) => m.chatId === "42")).toEqual([]);
    });

    it("deliver a reminder through the bot it was set on", async () => {
      await start();
      const at = new Date(Date.now() + 1500).toISOString();
      model.respond((request) => {
        const last = request.messages.at(-1);
        if (last?.role === "tool") return { content: "set" };
        if (String(last?.content).includes("water the plants") && conversationOf(request).includes("shop")) {
          if (request.messages.some((m) => m.role === "tool")) return { content: "Time to water the plants!" };
        }
        if (String(last?.content).includes("remind me")) {
          return { toolCalls: [{ name: "cron", arguments: { action: "add", message: "water the plants", at } }] };
        }
        return { content: "Time to water the plants!" };
      });
      shop.pushUpdate(message(privateChat(7), user(7), { text: "remind me to water the plants" }));
      await until(() => shop.sent.some((m) => m.text === "set"), "the reminder to be set");
      await until(() => shop.sent.some((m) => m.text === "Time to water the plants!"), "the reminder", 20_000);
      expect(home.sent.filter((m) => m.chatId === "7")).toEqual([]);
    });
  });

  describe("two agents behind two bots", () => {
    let shopModel: FakeOpenAI;
    beforeAll(async () => {
      shopModel = await startFakeOpenAI();
      shopModel.requireKey("shop-key");
      model.requireKey("test");
    });
    afterAll(async () => {
      model.requireKey(undefined);
      await shopModel.close();
    });

    beforeEach(() => {
      shopModel.requests.length = 0;
    });

    /** The shop agent: its own workspace (persona Shopkeeper Sam), endpoint and key, and no exec. */
    function shopAgent() {
      const workspace = tempHome("pincer-shop-ws-");
      writeFileSync(join(workspace, "SOUL.md"), "You are Shopkeeper Sam.");
      const model = { name: "shop-model", baseUrl: shopModel.url, apiKeyEnv: "SHOP_KEY" };
      return { shop: { workspace, model, agent: { disabledTools: ["exec"] } } };
    }

    it("answer each with its own persona, model, key and tools; neither sees the other's conversation", async () => {
      await start({ agents: shopAgent() }, { SHOP_KEY: "shop-key" });
      home.pushUpdate(message(privateChat(7), user(7), { text: "hello home" }));
      shop.pushUpdate(message(privateChat(7), user(7), { text: "hello shop" }));
      await until(() => shopModel.requests.length > 0 && model.requests.length > 0, "both agents' model calls");
      await until(() => shop.sent.some((m) => m.chatId === "7" && m.text === "ok"), "the shop's answer");
      const [shopCall] = shopModel.requests;
      expect(shopCall.model).toBe("shop-model");
      expect(shopCall.headers.authorization).toBe("Bearer shop-key");
      expect(String(shopCall.messages[0].content)).toContain("Shopkeeper Sam");
      expect(conversationOf(shopCall)).toBe("shop/telegram@shop:7");
      expect(shopCall.tools?.map((t) => t.function.name)).not.toContain("exec");
      expect(JSON.stringify(shopCall.messages)).not.toContain("hello home");
      const homeCall = model.requests.find((r) => conversationOf(r) === "telegram:7");
      expect(homeCall?.headers.authorization).toBe("Bearer test");
      expect(String(homeCall?.messages[0].content)).not.toContain("Shopkeeper Sam");
      expect(homeCall?.tools?.map((t) => t.function.name)).toContain("exec");
      expect(JSON.stringify(homeCall?.messages)).not.toContain("hello shop");
      expect(shopModel.keysSeen.every((key) => key === "shop-key")).toBe(true);
      expect(model.keysSeen).not.toContain("shop-key");
    });

    it("keep their memory and usage apart, and the shop's reminder runs as the shop, through its bot", async () => {
      const started = await start({ agents: shopAgent() }, { SHOP_KEY: "shop-key" });
      writeFileSync(join(started.config.workspace, "MEMORY.md"), "The shed key is under the flower pot.");
      // Both agents answer alike: a search for "shed" shows what it found, a reminder is set and then delivered.
      const answer = (request: (typeof model.requests)[number]) => {
        const last = request.messages.at(-1);
        const text = String(last?.content);
        const asked = String(request.messages.findLast((m) => m.role === "user")?.content);
        if (last?.role === "tool") return { content: asked.includes("shed") ? `found: ${text}` : "set" };
        if (text.includes("shed")) return { toolCalls: [{ name: "memory_search", arguments: { query: "shed" } }] };
        if (text.includes("remind me")) {
          const at = new Date(Date.now() + 1500).toISOString();
          return { toolCalls: [{ name: "cron", arguments: { action: "add", message: "water the plants", at } }] };
        }
        return { content: text.includes("water the plants") ? "Time to water the plants!" : "ok" };
      };
      model.respond(answer);
      shopModel.respond(answer);
      const asked = (bot: FakeTelegram, prefix: string) => bot.sent.find((m) => m.text.startsWith(prefix))?.text;
      for (const bot of [home, shop])
        bot.pushUpdate(message(privateChat(7), user(7), { text: "where is the shed key?" }));
      await until(() => asked(home, "found:") && asked(shop, "found:"), "both agents' memory searches");
      expect(asked(home, "found:")).toContain("under the flower pot");
      expect(asked(shop, "found:")).toBe('found: No memory matches "shed".');

      shop.pushUpdate(message(privateChat(7), user(7), { text: "remind me to water the plants" }));
      await until(() => shop.sent.some((m) => m.text === "set"), "the reminder to be set");
      await until(() => shop.sent.some((m) => m.text === "Time to water the plants!"), "the reminder", 20_000);
      const run = shopModel.requests.find((r) => JSON.stringify(r.messages).includes("[system: scheduler]"));
      expect(run && conversationOf(run)).toBe("shop/telegram@shop:7");
      expect(model.requests.filter((r) => JSON.stringify(r.messages).includes("plants"))).toEqual([]);
      expect(home.sent.filter((m) => m.text.includes("plants") || m.text === "set")).toEqual([]);

      // Each bot's /usage counts its own agent's calls only: "all chats" is all of that agent's chats.
      for (const bot of [home, shop]) bot.pushUpdate(message(privateChat(7), user(7), { text: "/usage" }));
      await until(() => asked(home, "Model usage") && asked(shop, "Model usage"), "both usage reports");
      const mainModel = String(model.requests[0]?.model);
      expect(asked(shop, "Model usage")).toContain("shop-model");
      expect(asked(shop, "Model usage")).not.toContain(mainModel);
      expect(asked(home, "Model usage")).toContain(mainModel);
      expect(asked(home, "Model usage")).not.toContain("shop-model");
    });
  });
});
