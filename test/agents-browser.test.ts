/**
 * Several agents on the control page, in a real Chromium: the Agents section lists the agents, the bots (connected or
 * not) and the bindings; the web chat's agent picker makes the turn run as that agent (persona, endpoint, key) and
 * keeps each agent's web chat in its own scope. Two agents on two scripted endpoints, each taking only its own key.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withoutTurnFacts } from "../src/turn-facts.js";
import { type FakeOpenAI, startFakeOpenAI } from "./fakes/openai-server.js";
import { tempHome } from "./helpers/app.js";
import { findBinary, hasSystemPackage } from "./helpers/system-packages.js";
import { startTelegramHarness, type TelegramHarness } from "./helpers/telegram.js";
import { login, startWebHarness, type WebHarness } from "./helpers/web.js";

const CHROMIUM =
  process.env.PINCER_CHROMIUM ?? (hasSystemPackage("chromium", "chromium") ? findBinary("chromium") : undefined);

const conversationOf = (request: FakeOpenAI["requests"][number]) =>
  /Conversation: (\S+)/.exec(String(request.messages[0]?.content))?.[1];

describe.runIf(CHROMIUM)("the control page with two agents", () => {
  let shop: FakeOpenAI;
  let tg: TelegramHarness;
  let h: WebHarness;
  let browser: Browser;
  const dir = tempHome("pincer-agents-page-");
  const workspace = join(dir, "shop-workspace");

  beforeAll(async () => {
    shop = await startFakeOpenAI();
    shop.requireKey("shop-key");
    shop.respond(() => ({ content: "Sam the shopkeeper answers" }));
    mkdirSync(workspace);
    writeFileSync(join(workspace, "SOUL.md"), "You are Shopkeeper Sam.");
    writeFileSync(
      join(dir, "config.json"),
      JSON.stringify({
        agents: {
          shop: {
            workspace,
            model: { name: "shop-model", baseUrl: shop.url, apiKeyEnv: "SHOP_KEY" },
            agent: { disabledTools: ["exec"] },
          },
        },
        bindings: [{ agent: "shop", channel: "telegram", chat: "-100123" }],
      }),
    );
    tg = await startTelegramHarness({
      env: { PINCER_WEB_ADDR: "127.0.0.1:0", PINCER_CONFIG: join(dir, "config.json"), SHOP_KEY: "shop-key" },
    });
    tg.model.requireKey("test");
    tg.model.respond(() => ({ content: "main answers" }));
    h = await startWebHarness(tg.app, [tg.channel]);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
  }, 30_000);
  afterAll(async () => {
    await browser?.close();
    await h?.close();
    await tg?.close();
    await shop?.close();
  });

  /** Types into the web chat and waits for the answer's bubble. */
  async function chat(page: Page, text: string, answer: string) {
    await page.locator("#chat-form textarea").fill(text);
    await page.locator("#chat-form button").click();
    await page.locator("#chat-log li.msg.bot .text", { hasText: answer }).waitFor({ timeout: 20_000 });
  }

  it("lists agents, bots and bindings, and runs each web chat as the agent picked", async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on("pageerror", (err) => errors.push(err.message));
    await page.goto(`${h.base}/?token=${encodeURIComponent(h.token)}`);

    const agents = page.locator("#agents");
    await expect.poll(() => agents.textContent()).toContain("shop-model at");
    expect(await agents.locator("li").allTextContents()).toEqual([
      `main gpt-4.1-mini at ${tg.model.url} · ${tg.app.config.workspace}`,
      `shop shop-model at ${shop.url} · ${workspace}`,
      "telegram agent main connected",
      "telegram chat -100123 → shop",
    ]);
    expect(await page.locator("#h-chat small").textContent()).toBe("web:main");
    expect(await page.locator("#agent option").allTextContents()).toEqual(["main", "shop"]);

    // A second page stays on main's web chat throughout: it hears main's replies live, never the shop's.
    const watcher = await browser.newPage();
    await watcher.goto(`${h.base}/?token=${encodeURIComponent(h.token)}`);
    await expect.poll(() => watcher.locator("#live").textContent()).toBe("live");

    // The shop, picked: its persona, endpoint and key answer, in its own conversation.
    await page.locator("#agent").selectOption("shop");
    await expect.poll(() => page.locator("#h-chat small").textContent()).toBe("shop/web:main");
    expect(await page.locator("#model").textContent()).toBe("shop-model");
    await chat(page, "what do you sell?", "Sam the shopkeeper answers");
    expect(shop.requests.map(conversationOf)).toEqual(["shop/web:main"]);
    expect(shop.requests[0].headers.authorization).toBe("Bearer shop-key");
    expect(String(shop.requests[0].messages[0].content)).toContain("Shopkeeper Sam");
    expect(shop.requests[0].tools?.map((t) => t.function.name)).not.toContain("exec");
    expect(tg.model.requests).toEqual([]);

    // Main, picked: its own answer, and none of the shop's chat on its page or in its history.
    await page.locator("#agent").selectOption("main");
    await expect.poll(() => page.locator("#h-chat small").textContent()).toBe("web:main");
    expect(await page.locator("#chat-log").textContent()).not.toContain("Sam");
    await chat(page, "family news?", "main answers");
    expect(tg.model.requests.map(conversationOf)).toEqual(["web:main"]);
    expect(tg.model.requests[0].tools?.map((t) => t.function.name)).toContain("exec");
    expect(String(tg.model.requests[0].messages[0].content)).not.toContain("Shopkeeper Sam");
    expect(JSON.stringify(tg.model.requests)).not.toContain("what do you sell?");
    expect(tg.model.keysSeen).not.toContain("shop-key");
    expect(shop.requests).toHaveLength(1);
    await watcher.locator("#chat-log li.msg.bot .text", { hasText: "main answers" }).waitFor({ timeout: 20_000 });
    expect(await watcher.locator("#chat-log").textContent()).not.toContain("Sam");
    await watcher.close();

    // Back to the shop: its web chat shows its own history, stored under its agent.
    await page.locator("#agent").selectOption("shop");
    await expect.poll(() => page.locator("#chat-log").textContent()).toContain("Sam the shopkeeper answers");
    expect(await page.locator("#chat-log").textContent()).not.toContain("main answers");
    const texts = async (key: string) =>
      (await tg.app.store.dashboard.history(key)).map((e) => withoutTurnFacts(e.text ?? ""));
    expect(await texts("shop/web:main")).toEqual(["what do you sell?", "Sam the shopkeeper answers"]);
    expect(await texts("web:main")).toEqual(["family news?", "main answers"]);
    expect(errors).toEqual([]);
    await page.close();

    // A chat of an agent that is not configured is refused, whatever its name looks like.
    const headers = { ...(await login(h.base, h.token)), "content-type": "application/json" };
    for (const chatId of ["nope/main", "constructor/main", "shop/../main", "Shop/main"]) {
      const body = JSON.stringify({ chatId, text: "hi" });
      expect((await fetch(`${h.base}/api/chat`, { method: "POST", headers, body })).status).toBe(400);
    }
    expect(shop.requests).toHaveLength(1);
  }, 60_000);
});
