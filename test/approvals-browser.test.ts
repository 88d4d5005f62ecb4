import { beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM, controlPageInChromium } from "./helpers/browser.js";
import { message, privateChat, user } from "./helpers/telegram.js";
import { until } from "./helpers/until.js";

/** The control page's approvals section in Debian's Chromium (as test/dashboard-browser.test.ts). */

describe.runIf(CHROMIUM !== undefined)("approvals on the control page in Chromium", () => {
  const inChromium = controlPageInChromium({
    adjust: (config) => {
      config.approvals.exec = "ask";
    },
  });
  beforeAll(() => {
    inChromium.tg.model.respond((request) => {
      const last = request.messages.at(-1);
      if (last?.role === "tool") return { content: `tool said: ${last.content}` };
      return { toolCalls: [{ name: "exec", arguments: { command: "echo from-the-page" } }] };
    });
  });

  it("lists a pending call with the three choices; Always allow, Revoke and Deny work from the page", async () => {
    const { tg } = inChromium;
    const { page, errors } = await inChromium.open();
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
