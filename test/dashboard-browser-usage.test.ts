import { describe, expect, it } from "vitest";
import { CHROMIUM, controlPageInChromium } from "./helpers/browser.js";
import { message, privateChat, user } from "./helpers/telegram.js";

// The control page's usage section in Debian's chromium.
const DAY = 24 * 3600_000;

describe.runIf(CHROMIUM !== undefined)("the control page's usage in Chromium", () => {
  const inChromium = controlPageInChromium();

  it("draws tokens and cost per day over 30 days and lists this month's chats", async () => {
    const { tg, h, browser } = inChromium;
    tg.model.enqueue({
      content: "counted",
      usage: { prompt_tokens: 4000, completion_tokens: 1000, prompt_tokens_details: { cached_tokens: 2400 } },
    });
    tg.telegram.pushUpdate(message(privateChat(42), user(42, "Ada"), { text: "hello" }));
    await tg.telegram.waitFor(() => tg.telegram.sent.find((m) => m.text === "counted"));
    // Two days ago, a heavier day with a cost; 40 days ago, a day the chart leaves out.
    const past = { kind: "reminder", model: "m", completionTokens: 0, cachedTokens: 0, estimated: false };
    await tg.app.store.usage.record({
      ...past,
      sessionKey: "telegram:42",
      promptTokens: 20_000,
      cost: 0.25,
      at: Date.now() - 2 * DAY,
    });
    await tg.app.store.usage.record({
      ...past,
      sessionKey: "telegram:7",
      promptTokens: 99_999,
      cost: 9,
      at: Date.now() - 40 * DAY,
    });

    const page = await (await browser.newContext({ viewport: { width: 1280, height: 1000 } })).newPage();
    const errors: string[] = [];
    page.on("pageerror", (err) => errors.push(err.message));
    page.on("console", (msg) => {
      if (msg.type() === "error") errors.push(msg.text());
    });
    await page.goto(`${h.base}/?token=${encodeURIComponent(h.token)}`);
    const chart = page.locator("#usage svg.chart");
    await expect.poll(() => chart.count()).toBe(1);
    expect(await chart.locator("g").count()).toBe(30);
    const titles = await chart.locator("g > title").allTextContents();
    const today = new Date().toISOString().slice(0, 10);
    const twoDaysAgo = new Date(Date.now() - 2 * DAY).toISOString().slice(0, 10);
    expect(titles.at(-1)).toBe(`${today}: 5,000 tokens, cost 0.0000`);
    expect(titles.at(-3)).toBe(`${twoDaysAgo}: 20,000 tokens, cost 0.2500`);
    expect(titles.filter((t) => !t.includes(": 0 tokens"))).toHaveLength(2);
    // The browser lays the bars out as drawn: the heavier day's bar is four times today's, the cost bar only there.
    const height = async (day: number, kind: string) =>
      (await chart.locator("g").nth(day).locator(`rect.${kind}`).boundingBox())?.height ?? -1;
    expect(await height(27, "tokens")).toBeCloseTo(4 * (await height(29, "tokens")), 0);
    expect(await height(27, "cost")).toBeGreaterThan(50);
    expect(await height(29, "cost")).toBe(0);
    const fill = await chart.locator("rect.tokens").first().evaluate("(el) => getComputedStyle(el).fill");
    expect(fill).not.toBe("rgb(0, 0, 0)");

    const rows = await page.locator("#usage table.usage tbody tr").allTextContents();
    const thisMonth = new Date(Date.now() - 2 * DAY).getUTCMonth() === new Date().getUTCMonth();
    expect(rows[0]).toBe(
      // The prompt's share served from the server's cache: 2,400 of 24,000 this month, of 4,000 today.
      thisMonth
        ? "telegram:42225,000 (10% cached)0.2500 + unknown (1 call without a price)"
        : "telegram:4215,000 (60% cached)cost unknown",
    );
    expect(rows.join()).not.toContain("telegram:7");
    expect(errors).toEqual([]);
  });
});
