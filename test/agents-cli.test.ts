/**
 * Several agents from the terminal, as a user runs it: the built CLI against two scripted model endpoints, each taking
 * only its own key. `pincer agent --agent NAME -m` and `pincer chat --agent NAME` run as that agent (persona, model,
 * key, history); an unknown name stops with one sentence; `pincer status` lists the agents, the bots (connected or not,
 * as the running gateway says) and the bindings. The agents' turns run on both engines (SQLite, and PostgreSQL).
 */
import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { packageRoot } from "../src/paths.js";
import { type FakeOpenAI, startFakeOpenAI } from "./fakes/openai-server.js";
import { type FakeTelegram, startFakeTelegram } from "./fakes/telegram-server.js";
import { tempHome } from "./helpers/app.js";
import { startBotRouter } from "./helpers/bot-router.js";
import { killHard, pincer, startDaemon, stopDaemon } from "./helpers/daemon.js";
import { ENGINES, engineEnv } from "./helpers/engines.js";
import { freePort } from "./helpers/net.js";
import { until } from "./helpers/until.js";

const SHOP_TOKEN = "654321:AAH-fake-shop-token_for_tests_012345";
let main: FakeOpenAI;
let shop: FakeOpenAI;
beforeAll(async () => {
  [main, shop] = await Promise.all([startFakeOpenAI(), startFakeOpenAI()]);
  main.requireKey("main-key");
  shop.requireKey("shop-key");
  main.respond(() => ({ content: "main answers" }));
  shop.respond(() => ({ content: "Sam the shopkeeper answers" }));
});
afterAll(() => Promise.all([main.close(), shop.close()]));

/** A home with the agents main and shop (its own workspace, persona, endpoint and key), and the environment. */
function twoAgents(extra: object = {}) {
  const home = tempHome("pincer-agents-cli-");
  const workspace = join(home, "shop-workspace");
  mkdirSync(workspace);
  writeFileSync(join(workspace, "SOUL.md"), "You are Shopkeeper Sam.");
  const shopModel = { name: "shop-model", baseUrl: shop.url, apiKeyEnv: "SHOP_KEY" };
  writeFileSync(
    join(home, "config.json"),
    JSON.stringify({ agents: { shop: { workspace, model: shopModel } }, ...extra }),
  );
  const env = {
    OPENAI_API_KEY: "main-key",
    OPENAI_BASE_URL: main.url,
    SHOP_KEY: "shop-key",
    PINCER_SANDBOX: "none",
    PINCER_TIMEZONE: "UTC",
    PINCER_WEB_ADDR: "off",
    LOG_LEVEL: "silent",
  };
  return { home, workspace, env };
}

const conversationOf = (request: FakeOpenAI["requests"][number]) =>
  /Conversation: (\S+)/.exec(String(request.messages[0]?.content))?.[1];

describe.each(ENGINES)("on %s", (engine) => {
  const database = engineEnv(engine);
  /** The home and environment, on this engine's database. */
  const onEngine = async (setup: ReturnType<typeof twoAgents>) => ({
    ...setup,
    env: { ...setup.env, ...(await database.env()) },
  });

  describe("pincer agent with --agent", () => {
    it("run the turn as that agent, with its persona, model, key and its own history", async () => {
      const { home, env } = await onEngine(twoAgents());
      main.requests.length = 0;
      shop.requests.length = 0;
      const first = await pincer(["agent", "--agent", "shop", "-m", "what do you sell?"], home, env);
      expect(first.stdout.trim()).toBe("Sam the shopkeeper answers");
      expect(first.code).toBe(0);
      expect(await pincer(["agent", "-m", "family news?"], home, env)).toMatchObject({
        code: 0,
        stdout: "main answers\n",
      });
      const again = await pincer(["agent", "--agent", "shop", "-m", "and prices?"], home, env);
      expect(again.stdout.trim()).toBe("Sam the shopkeeper answers");

      expect(shop.requests.map(conversationOf)).toEqual(["shop/console:local", "shop/console:local"]);
      expect(
        shop.requests.every((r) => r.model === "shop-model" && r.headers.authorization === "Bearer shop-key"),
      ).toBe(true);
      expect(String(shop.requests[0].messages[0].content)).toContain("Shopkeeper Sam");
      // The shop's second turn has its own first one, and nothing of main's.
      const history = JSON.stringify(shop.requests[1].messages);
      expect(history).toContain("what do you sell?");
      expect(history).not.toContain("family news?");
      expect(main.requests.map(conversationOf)).toEqual(["console:local"]);
      expect(String(main.requests[0].messages[0].content)).not.toContain("Shopkeeper Sam");
      expect(main.keysSeen).not.toContain("shop-key");
    }, 60_000);

    it("an unknown agent stops with one sentence naming the agents", async () => {
      const { home, env } = await onEngine(twoAgents());
      for (const command of [
        ["agent", "--agent", "shpo", "-m", "hi"],
        ["chat", "--agent", "shpo"],
      ]) {
        const result = await pincer(command, home, env);
        expect(result.code).toBe(1);
        expect(result.stderr).toBe('pincer: --agent "shpo" is not an agent (agents: main, shop).\n');
      }
    }, 30_000);
  });

  describe("pincer chat with --agent", () => {
    it("chat --agent talks to that agent and says which one it is", async () => {
      const { home, env } = await onEngine(twoAgents());
      shop.requests.length = 0;
      const child = spawn(process.execPath, [join(packageRoot(), "dist/src/cli/main.js"), "chat", "--agent", "shop"], {
        env: { PATH: process.env.PATH, HOME: home, PINCER_HOME: home, ...env },
        cwd: home,
      });
      let stdout = "";
      child.stdout.on("data", (chunk) => {
        stdout += chunk;
      });
      const exited = new Promise((resolve) => child.on("exit", resolve));
      child.stdin.end("hello Sam\n");
      await until(
        () => stdout.includes("pincer: Sam the shopkeeper answers"),
        "the shop's answer",
        30_000,
        () => stdout,
      );
      expect(await exited).toBe(0);
      expect(stdout).toContain("pincer chat — agent shop, model shop-model.");
      expect(shop.requests.map(conversationOf)).toEqual(["shop/console:local"]);
    }, 60_000);
  });
});

describe("pincer status with several agents", () => {
  let home: FakeTelegram;
  let shopBot: FakeTelegram;
  let router: Awaited<ReturnType<typeof startBotRouter>>;
  beforeAll(async () => {
    home = await startFakeTelegram();
    shopBot = await startFakeTelegram({ token: SHOP_TOKEN, bot: { username: "shop_bot", first_name: "Shop" } });
    router = await startBotRouter({ [home.token]: home.apiRoot, [SHOP_TOKEN]: shopBot.apiRoot });
  });
  afterAll(async () => {
    await router.close();
    await Promise.all([home.close(), shopBot.close()]);
  });

  it("lists the agents, each bot with its agent and whether it is connected, and the bindings", async () => {
    const bindings = [{ agent: "shop", channel: "telegram", account: "default", chat: "-100123" }];
    const accounts = { telegram: { shop: { tokenEnv: "TG_SHOP", agent: "shop" } } };
    const setup = twoAgents({ accounts, bindings });
    const port = await freePort();
    const env = {
      ...setup.env,
      PINCER_WEB_ADDR: `127.0.0.1:${port}`,
      TELEGRAM_BOT_TOKEN: home.token,
      TELEGRAM_API_ROOT: router.url,
      TELEGRAM_ALLOW_FROM: "42",
      TG_SHOP: SHOP_TOKEN,
    };
    const daemon = startDaemon(setup.home, { ...env, LOG_LEVEL: "info" });
    try {
      const healthy = async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.ok;
      await until(healthy, "both bots connected", 30_000, () => daemon.output.join(""));
      const { stdout, code } = await pincer(["status"], setup.home, env);
      expect(code).toBe(0);
      const section = stdout.slice(stdout.indexOf("agents:"), stdout.indexOf("conversations:"));
      expect(section).toBe(
        [
          "agents:",
          `  main           gpt-4.1-mini at ${main.url}, workspace ${join(setup.home, "workspace")}`,
          `  shop           shop-model at ${shop.url}, workspace ${setup.workspace}`,
          "accounts:",
          "  telegram       agent main, connected",
          "  telegram@shop  agent shop, connected",
          "bindings:",
          "  telegram account default chat -100123 → shop",
          "",
        ].join("\n"),
      );
      expect(stdout).not.toContain("shop-key");
      expect(await stopDaemon(daemon)).toBe(0);
      const after = await pincer(["status"], setup.home, env);
      expect(after.stdout).toContain(`accounts:      (no gateway answers at http://127.0.0.1:${port}/healthz)`);
      expect(after.stdout).toMatch(/^ {2}telegram@shop +agent shop, unknown$/m);
    } finally {
      await killHard(daemon);
    }
  }, 60_000);
});
