import { once } from "node:events";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { packageRoot } from "../src/paths.js";
import { tempHome } from "./helpers/app.js";
import { findBinary, hasSystemPackage } from "./helpers/system-packages.js";
import { message, privateChat, startTelegramHarness, type TelegramHarness, user } from "./helpers/telegram.js";
import { startWebHarness, type WebHarness } from "./helpers/web.js";

/**
 * The control page in a real browser: Debian's `chromium` driven by playwright-core (no browser
 * download), found on PATH. Without it hasSystemPackage says so loudly and the suite skips, except
 * in CI, where the file fails.
 */
const CHROMIUM =
  process.env.PINCER_CHROMIUM ?? (hasSystemPackage("chromium", "chromium") ? findBinary("chromium") : undefined);
const available = CHROMIUM !== undefined;
// The docs' screenshots are refreshed on request (UPDATE_SCREENSHOTS=1), so a test run leaves the checkout clean.
const SHOTS = process.env.UPDATE_SCREENSHOTS ? join(packageRoot(), "docs") : tempHome("pincer-screenshots-");

describe.runIf(available)("control page in Chromium", () => {
  let tg: TelegramHarness;
  let h: WebHarness;
  let browser: Browser;

  beforeAll(async () => {
    tg = await startTelegramHarness({ env: { PINCER_WEB_ADDR: "127.0.0.1:0" } });
    h = await startWebHarness(tg.app, [tg.channel]);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
    tg.model.respond((request) => {
      const last = request.messages.at(-1);
      const text = typeof last?.content === "string" ? last.content : "";
      if (last?.role === "tool") return { content: "Done: I will remind you to water the plants." };
      if (text.includes("water the plants")) {
        const at = new Date(Date.now() + 3 * 24 * 3600 * 1000).toISOString().slice(0, 16);
        return {
          toolCalls: [
            { name: "cron", arguments: { action: "add", message: "Water the plants", at, name: "plants", tz: "UTC" } },
          ],
        };
      }
      if (text.includes("hello from the browser")) return { content: "Hello! This answer came through the web chat." };
      if (text.includes("show me html"))
        return { content: `<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>` };
      return { content: "ok" };
    });
  }, 30_000);

  afterAll(async () => {
    await browser?.close();
    await h?.close();
    await tg?.close();
  });

  it("shows a Telegram conversation and its reminder, removes the reminder and chats", async () => {
    tg.telegram.pushUpdate(message(privateChat(42), user(42, "Ada"), { text: "Please remind me to water the plants" }));
    await tg.telegram.waitFor(() => tg.telegram.sent.find((m) => m.text.includes("water the plants")));

    const context = await browser.newContext({ viewport: { width: 1280, height: 1000 }, colorScheme: "light" });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on("pageerror", (err) => errors.push(err.message));
    page.on("console", (msg) => {
      if (msg.type() === "error") errors.push(msg.text());
    });
    await page.goto(`${h.base}/?token=${encodeURIComponent(h.token)}`);
    // The token leaves the address bar at once; the origin's localStorage holds the session, no cookie.
    expect(page.url()).toBe(`${h.base}/`);
    await expect.poll(() => page.evaluate(`localStorage.getItem("pincer-session")`)).toMatch(/^[\w-]{43}$/);
    expect(await context.cookies()).toEqual([]);
    // A second tab (or a bookmark) of the same address is logged in too, without the token.
    const second = await context.newPage();
    await second.goto(`${h.base}/`);
    await expect.poll(() => second.locator("#conversations").textContent()).toContain("telegram:42");
    expect(await second.locator("#locked").isHidden()).toBe(true);
    await second.close();

    const conversations = page.locator("#conversations");
    await expect.poll(() => conversations.textContent()).toContain("telegram:42");
    expect(await conversations.textContent()).toContain("Done: I will remind you to water the plants.");
    const reminders = page.locator("#jobs");
    expect(await reminders.textContent()).toContain("plants");
    expect(await page.locator("#status").textContent()).toMatch(/telegram\s*connected/);
    await expect.poll(() => page.locator("#live").textContent()).toBe("live");

    // The web chat: typed in the page, through the bus and the agent, answered over SSE.
    await page.locator("#chat-form textarea").fill("hello from the browser");
    await page.locator("#chat-form button").click();
    await page.locator("#chat-log li.bot", { hasText: "This answer came through the web chat." }).waitFor();

    await page.screenshot({ path: join(SHOTS, "dashboard.png"), fullPage: true });

    // Markup in a reply (and in the user's own message) is shown as text, live and after a reload.
    await page.locator("#chat-form textarea").fill('show me html <img src=y onerror="window.pwned=3">');
    await page.locator("#chat-form button").click();
    await page.locator("#chat-log li.bot", { hasText: "<script>window.pwned=2</script>" }).waitFor();
    await page.reload();
    await page.locator("#chat-log li.bot", { hasText: "<script>window.pwned=2</script>" }).waitFor();
    expect(await page.evaluate("window.pwned")).toBeUndefined();
    expect(await page.locator("#chat-log img, #chat-log script").count()).toBe(0);

    // Delete the reminder with its button (the browser asks once more): gone from the page and from the database.
    page.once("dialog", (dialog) => void dialog.accept());
    await reminders.getByRole("button", { name: "Delete" }).click();
    await expect.poll(() => reminders.textContent()).toContain("No jobs.");
    expect(await tg.app.store.jobs.listAll()).toEqual([]);

    // A conversation's history shows the tool call as the audit recorded it.
    await conversations.getByText("telegram:42").click();
    const history = page.locator("#history");
    await history.locator("summary", { hasText: "cron" }).click();
    expect(await history.textContent()).toContain("Water the plants");
    expect(await history.textContent()).toContain("Please remind me to water the plants");

    // A phone's screen, in dark mode.
    const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, colorScheme: "dark" });
    const small = await phone.newPage();
    await small.goto(`${h.base}/?token=${encodeURIComponent(h.token)}`);
    await small.locator("#conversations", { hasText: "telegram:42" }).waitFor();
    const overflow = (await small.evaluate("document.documentElement.scrollWidth - window.innerWidth")) as number;
    expect(overflow).toBeLessThanOrEqual(0);
    await small.screenshot({ path: join(SHOTS, "dashboard-phone.png") });
    expect(errors).toEqual([]);
    await phone.close();
    await context.close();
  }, 60_000);

  it("gives a page on another local port nothing to replay, and logs out for good", async () => {
    // Another local user's server on another port of 127.0.0.1: it keeps every header the
    // owner's browser sends it, and its page tries the control page from inside the browser.
    const seen: IncomingHttpHeaders[] = [];
    const target = h.base;
    const evil = createServer((req, res) => {
      seen.push(req.headers);
      res.setHeader("content-type", "text/html");
      res.end(`<script>
        window.cookies = document.cookie;
        fetch("${target}/api/state", { credentials: "include" }).then(() => { window.read = "yes"; }, () => { window.read = "no"; });
        fetch("${target}/api/chat", { method: "POST", mode: "no-cors", credentials: "include",
          headers: { "content-type": "text/plain" }, body: JSON.stringify({ chatId: "evil", text: "from another port" }) })
          .finally(() => { window.posted = true; });
      </script>`);
    });
    evil.listen(0, "127.0.0.1");
    await once(evil, "listening");
    const evilBase = `http://127.0.0.1:${(evil.address() as AddressInfo).port}`;
    const context = await browser.newContext();
    try {
      const owner = await context.newPage();
      await owner.goto(`${h.base}/?token=${encodeURIComponent(h.token)}`);
      await owner.locator("#conversations").waitFor();
      await expect.poll(() => owner.locator("#live").textContent()).toBe("live");
      const session = (await owner.evaluate(`localStorage.getItem("pincer-session")`)) as string;

      // The owner, logged in, opens the other user's page: in another tab and in the same one.
      const lured = await context.newPage();
      await lured.goto(`${evilBase}/lure`);
      await expect.poll(() => lured.evaluate("window.posted")).toBe(true);
      await expect.poll(() => lured.evaluate("window.read")).toBe("no");
      expect(await lured.evaluate("window.cookies")).toBe("");
      await owner.goto(`${evilBase}/same-tab`);
      await expect.poll(() => owner.evaluate("window.posted")).toBe(true);
      expect(seen.length).toBeGreaterThanOrEqual(2);
      // Whatever the browser sent the other port, replayed from a plain HTTP client, reads and posts nothing.
      for (const headers of seen) {
        const replay: Record<string, string> = {};
        for (const name of ["cookie", "authorization", "x-pincer-session"]) {
          if (typeof headers[name] === "string") replay[name] = headers[name] as string;
        }
        expect(JSON.stringify(headers)).not.toContain(session);
        expect((await fetch(`${h.base}/api/state`, { headers: replay })).status).toBe(401);
        const post = await fetch(`${h.base}/api/chat`, {
          method: "POST",
          headers: { ...replay, "content-type": "application/json" },
          body: JSON.stringify({ chatId: "evil", text: "replayed" }),
        });
        expect(post.status).toBe(401);
      }
      expect((await tg.app.store.dashboard.history("web:evil")).length).toBe(0);

      // Back in the owner's tab the session is still there; logging out ends it on the server too.
      await owner.goto(`${h.base}/`);
      await owner.locator("#conversations").waitFor();
      await owner.locator("#logout").click();
      await owner.locator("#locked").waitFor();
      expect(await owner.locator("#main").innerHTML()).toBe("");
      await owner.reload();
      await owner.locator("#locked").waitFor();
      expect((await fetch(`${h.base}/api/state`, { headers: { "x-pincer-session": session } })).status).toBe(401);
    } finally {
      await context.close();
      await new Promise<void>((resolve) => evil.close(() => resolve()));
    }
  }, 60_000);
});
