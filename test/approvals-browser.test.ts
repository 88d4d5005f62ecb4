import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findBinary, hasSystemPackage } from "./helpers/system-packages.js";
import { message, privateChat, startTelegramHarness, type TelegramHarness, user } from "./helpers/telegram.js";
import { until } from "./helpers/until.js";
import { startWebHarness, type WebHarness } from "./helpers/web.js";

/** The control page's approvals section in Debian's Chromium (as test/dashboard-browser.test.ts). */
const CHROMIUM =
  process.env.PINCER_CHROMIUM ?? (hasSystemPackage("chromium", "chromium") ? findBinary("chromium") : undefined);

describe.runIf(CHROMIUM !== undefined)("approvals on the control page in Chromium", () => {
  let tg: TelegramHarness;
  let h: WebHarness;
  let browser: Browser;

  beforeAll(async () => {
    tg = await startTelegramHarness({
      env: { PINCER_WEB_ADDR: "127.0.0.1:0" },
      adjust: (config) => {
        config.approvals.exec = "ask";
      },
    });
    h = await startWebHarness(tg.app, [tg.channel]);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
    tg.model.respond((request) => {
      const last = request.messages.at(-1);
      if (last?.role === "tool") return { content: `tool said: ${last.content}` };
      return { toolCalls: [{ name: "exec", arguments: { command: "echo from-the-page" } }] };
    });
  }, 30_000);

  afterAll(async () => {
    await browser?.close();
    await h?.close();
    await tg?.close();
  });

  it("lists a pending call with the three choices; Always allow, Revoke and Deny work from the page", async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on("pageerror", (err) => errors.push(err.message));
    await page.goto(`${h.base}/?token=${encodeURIComponent(h.token)}`);
    const section = page.locator("#approvals");
    await section.locator(".empty").waitFor();

    tg.telegram.pushUpdate(message(privateChat(42), user(42, "Ada"), { text: "run it" }));
    // New requests show with the page's next refresh (no event marks them).
    const pending = section.locator("li.approval", { hasText: "echo from-the-page" });
    await pending.waitFor({ timeout: 15_000 });
    expect(await pending.textContent()).toContain("telegram:42");
    await pending.getByRole("button", { name: "Always allow" }).click();
    await tg.telegram.waitFor(() => tg.telegram.sent.find((m) => m.text.includes("tool said: from-the-page")));
    const [decided] = await tg.app.store.approvals.allowedEntries();
    expect(decided).toMatchObject({ sessionKey: "telegram:42", entry: "exec:echo from-the-page" });
    expect(decided.addedBy).toBe("the control page");

    // The entry is listed with Revoke; revoked, the next call asks again, and Deny reaches the model.
    await page.reload();
    const entry = section.locator("li", { hasText: "exec:echo from-the-page" });
    await entry.getByRole("button", { name: "Revoke" }).click();
    await until(async () => (await tg.app.store.approvals.allowedEntries()).length === 0, "the entry revoked");
    tg.telegram.pushUpdate(message(privateChat(42), user(42, "Ada"), { text: "again" }));
    await until(async () => (await tg.app.store.approvals.pending()).length === 1, "a new request");
    await page.reload();
    await section.locator("li.approval").getByRole("button", { name: "Deny" }).click();
    await tg.telegram.waitFor(() => tg.telegram.sent.find((m) => m.text.includes("denied by the user")));
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);
});
