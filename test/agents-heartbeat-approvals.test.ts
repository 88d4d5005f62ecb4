/**
 * An agent's own `heartbeat`, `approvals` and `message` settings (config `agents.NAME`), with two real grammy bots
 * against fake Bot API servers: each takes effect for its agent only; the heartbeat runs in the agent's own session
 * and workspace and speaks through the agent's bot; `message` reaches another agent's chat only when allowed, and then
 * through the sending agent's own bot. On both engines: the SQLite file, and PostgreSQL (clustered mode in one process).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createTelegramChannel } from "../channels/telegram/telegram-channel.js";
import type { App } from "../src/app.js";
import { mediaDir } from "../src/paths.js";
import type { ChatRequest } from "./fakes/openai-server.js";
import { type FakeTelegram, startFakeTelegram } from "./fakes/telegram-server.js";
import { tempHome, testApp } from "./helpers/app.js";
import { startBotRouter } from "./helpers/bot-router.js";
import { ENGINES, engineEnv } from "./helpers/engines.js";
import { fakeModelForFile } from "./helpers/model.js";
import { FAST_TIMING, groupChat, message, privateChat, user } from "./helpers/telegram.js";
import { until } from "./helpers/until.js";

const SHOP_TOKEN = "654321:AAH-fake-shop-token_for_tests_012345";
const model = fakeModelForFile();
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
    model.respond(() => ({ content: "ok" }));
    for (const bot of [home, shop]) bot.sent.length = 0;
  });

  /** pincer with the home bot (main) and the shop bot (agent shop, its own workspace and `shop` settings). */
  async function start(shopSettings: object, top: object = {}) {
    const dir = tempHome("pincer-agent-settings-");
    const shopWorkspace = tempHome("pincer-shop-ws-");
    const configFile = join(dir, "config.json");
    const agents = { shop: { workspace: shopWorkspace, ...shopSettings }, quiet: {} };
    const accounts = { telegram: { shop: { tokenEnv: "TG_SHOP", agent: "shop" } } };
    writeFileSync(configFile, JSON.stringify({ agents, accounts, ...top }));
    const started = await testApp(model.url, dir, {
      PINCER_CONFIG: configFile,
      TELEGRAM_BOT_TOKEN: home.token,
      TELEGRAM_API_ROOT: router.url,
      TELEGRAM_ALLOW_FROM: "7",
      TG_SHOP: SHOP_TOKEN,
      ...(await database.env()),
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
    await started.start(channels);
    app = started;
    return { app: started, shopWorkspace };
  }

  const conversationOf = (request: ChatRequest) =>
    /Conversation: (\S+)/.exec(String(request.messages[0]?.content))?.[1];
  const heartbeatOf = (app: App, agent: string) =>
    app.agents.find((a) => a.turn.config?.agentName === agent)?.heartbeat;
  const lastText = (request: ChatRequest) => String(request.messages.at(-1)?.content);

  describe("an agent's own heartbeat", () => {
    it("runs in its own session and workspace and speaks through its own bot; another agent inherits none", async () => {
      const { app, shopWorkspace } = await start(
        { heartbeat: { intervalMinutes: 60, target: "telegram:7" } },
        { heartbeat: { intervalMinutes: 60, target: "telegram:7" } },
      );
      writeFileSync(join(shopWorkspace, "HEARTBEAT.md"), "- count the apples in the shop\n");
      writeFileSync(join(app.config.workspace, "HEARTBEAT.md"), "- check the home disk\n");
      expect(heartbeatOf(app, "quiet")).toBeUndefined();
      model.respond((request) => ({ content: `${conversationOf(request)}: ${lastText(request).includes("apples")}` }));
      expect(await heartbeatOf(app, "shop")?.tick()).toBe(true);
      await until(() => shop.sent.length > 0, "the shop's heartbeat message");
      expect(shop.sent.map((m) => [m.chatId, m.text])).toEqual([["7", "shop/system:heartbeat: true"]]);
      expect(home.sent).toEqual([]);
      // Main's heartbeat reads main's file and speaks through main's bot, in its own session.
      expect(await app.heartbeat?.tick()).toBe(true);
      await until(() => home.sent.length > 0, "main's heartbeat message");
      expect(home.sent.map((m) => [m.chatId, m.text])).toEqual([["7", "system:heartbeat: false"]]);
      expect(shop.sent).toHaveLength(1);
      expect(await app.store.conversations.count("shop/system:heartbeat")).toBe(2);
      expect(await app.store.conversations.count("system:heartbeat")).toBe(2);
    });
  });

  describe("an agent's own approvals", () => {
    /** The model runs `echo` through exec, then says what the tool said. */
    function modelRunsEcho() {
      model.respond((request) => {
        const last = request.messages.at(-1);
        if (last?.role === "tool") return { content: `tool said: ${last.content}` };
        return { toolCalls: [{ name: "exec", arguments: { command: "echo from-exec" } }] };
      });
    }

    it("ask in that agent's chats only, through its bot; an Always allow there is not main's", async () => {
      const { app } = await start({ approvals: { exec: "ask", timeoutSeconds: 30 } });
      modelRunsEcho();
      home.pushUpdate(message(privateChat(7), user(7), { text: "run it at home" }));
      await until(() => home.sent.find((m) => m.text.startsWith("tool said:")), "main's unasked run");
      expect(home.sent.filter((m) => m.keyboard?.length)).toEqual([]);
      shop.pushUpdate(message(privateChat(7), user(7), { text: "run it in the shop" }));
      const prompt = await until(() => shop.sent.find((m) => m.keyboard?.length), "the shop's approval prompt");
      expect(prompt.text).toContain("echo from-exec");
      expect(prompt.text).toContain("30 s to answer");
      const [asked] = await app.store.approvals.pending();
      expect(asked.sessionKey).toBe("shop/telegram@shop:7");
      const tap = shop.tap(prompt, "Always allow", user(7));
      await until(() => shop.answers.get(tap), "the tap's answer");
      expect(shop.answers.get(tap)).toEqual({ text: "Always allowed here." });
      await until(() => shop.sent.find((m) => m.text.startsWith("tool said:")), "the shop's run");
      // The prompt is edited by the bot that sent it.
      await until(() => prompt.edits?.length, "the prompt's edit");
      expect(prompt.edits?.[0]).toContain("Always allowed here");
      expect(home.callsTo("editMessageText")).toEqual([]);
      expect(await app.store.approvals.allowedEntries()).toEqual([
        expect.objectContaining({ sessionKey: "shop/telegram@shop:7" }),
      ]);
    });

    it("in a group both bots are in, an Always allow given to one agent does not let the other run unasked", async () => {
      const { app } = await start({}, { approvals: { exec: "ask" } });
      modelRunsEcho();
      const group = groupChat(-100);
      home.pushUpdate(message(group, user(7), { text: "@pincer_test_bot run it" }));
      const prompt = await until(() => home.sent.find((m) => m.keyboard?.length), "main's approval prompt");
      home.tap(prompt, "Always allow", user(7));
      await until(() => home.sent.find((m) => m.text.startsWith("tool said:")), "main's run");
      shop.pushUpdate(message(group, user(7), { text: "@shop_bot run it" }));
      await until(() => shop.sent.find((m) => m.keyboard?.length), "the shop's own approval prompt");
      expect(shop.sent.filter((m) => m.text.startsWith("tool said:"))).toEqual([]);
      expect((await app.store.approvals.pending()).map((a) => a.sessionKey)).toEqual(["shop/telegram@shop:-100"]);
    });

    it("ask before a call of the agent's helper too", async () => {
      const { app } = await start({ approvals: { exec: "ask" } });
      model.respond((request) => {
        const last = request.messages.at(-1);
        if (String(request.messages[0].content).startsWith("You are a background helper")) {
          if (last?.role === "tool") return { content: `helper saw: ${last.content}` };
          return { toolCalls: [{ name: "exec", arguments: { command: "echo from-helper" } }] };
        }
        if (last?.role === "tool") return { content: "spawned" };
        return { toolCalls: [{ name: "spawn", arguments: { task: "run echo" } }] };
      });
      shop.pushUpdate(message(privateChat(7), user(7), { text: "have a helper run it" }));
      const prompt = await until(() => shop.sent.find((m) => m.keyboard?.length), "the helper's approval prompt");
      expect(prompt.text).toContain("echo from-helper");
      expect((await app.store.approvals.pending()).map((a) => a.sessionKey)).toEqual(["shop/telegram@shop:7"]);
    });
  });

  describe("message to another agent's chat", () => {
    /** The model writes to telegram:9 with the message tool, then says what the tool answered. */
    function modelWritesTo9() {
      model.respond((request) => {
        const last = request.messages.at(-1);
        if (last?.role === "tool") return { content: `tool said: ${last.content}` };
        return { toolCalls: [{ name: "message", arguments: { content: "psst", channel: "telegram", chat_id: "9" } }] };
      });
    }

    it("is refused unless the agent's own message.allowedTargets names it; main's list is not the agent's", async () => {
      await start({}, { message: { allowedTargets: ["telegram:9"] } });
      modelWritesTo9();
      shop.pushUpdate(message(privateChat(7), user(7), { text: "tell 9" }));
      const said = await until(() => shop.sent.find((m) => m.text.startsWith("tool said:")), "the shop's answer");
      expect(said.text).toMatch(/^tool said: Error: telegram:9 is not on agents\.shop\.message\.allowedTargets in/);
      expect([...home.sent, ...shop.sent].filter((m) => m.chatId === "9")).toEqual([]);
    });

    it("goes through the agent's own bot and into its own history when its settings allow it", async () => {
      const { app } = await start({ message: { allowedTargets: ["telegram:9"] } });
      modelWritesTo9();
      shop.pushUpdate(message(privateChat(7), user(7), { text: "tell 9" }));
      await until(() => shop.sent.find((m) => m.text.startsWith("tool said:")), "the shop's answer");
      expect(shop.sent.filter((m) => m.chatId === "9").map((m) => m.text)).toEqual(["psst"]);
      expect(home.sent).toEqual([]);
      expect(await app.store.conversations.count("shop/telegram@shop:9")).toBe(2);
      expect(await app.store.conversations.count("telegram:9")).toBe(0);
    });
  });
});
