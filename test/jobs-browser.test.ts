import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FakeReply } from "./fakes/openai-server.js";
import { findBinary, hasSystemPackage } from "./helpers/system-packages.js";
import { message, privateChat, startTelegramHarness, type TelegramHarness, user } from "./helpers/telegram.js";
import { until } from "./helpers/until.js";
import { startWebHarness, type WebHarness } from "./helpers/web.js";

/**
 * The Jobs section of the control page in Debian's Chromium (as test/dashboard-browser.test.ts): a reminder set in a
 * Telegram chat (real grammy, the fake Bot API, the fake model calling the cron tool) is seen, paused, resumed, run,
 * edited and deleted from the page, and its runs are listed with their outcome and cost.
 */
const CHROMIUM =
  process.env.PINCER_CHROMIUM ?? (hasSystemPackage("chromium", "chromium") ? findBinary("chromium") : undefined);
const SCHEDULER_PREFIX = "[system: scheduler]";
/** The job's period: short, so pausing and resuming are seen in seconds. */
const EVERY = 2;

/** A scheduled run answers with the text the job was given, so an edit shows in the next delivery. */
export function reminderModel(request: { messages: Array<{ role: string; content?: unknown }> }): FakeReply {
  const last = request.messages.at(-1);
  const text = typeof last?.content === "string" ? last.content : "";
  if (last?.role === "tool") return { content: `Set: ${text.split("\n")[0]}` };
  if (text.startsWith(SCHEDULER_PREFIX)) {
    const asked = /What the user asked for when they set it up: (.*)/.exec(text)?.[1] ?? "?";
    return { content: `REMINDER: ${asked}`, usage: { prompt_tokens: 40, completion_tokens: 10 } };
  }
  return {
    toolCalls: [{ name: "cron", arguments: { action: "add", message: "stretch your legs", every_seconds: EVERY } }],
  };
}

describe.runIf(CHROMIUM !== undefined)("jobs on the control page in Chromium", () => {
  let tg: TelegramHarness;
  let h: WebHarness;
  let browser: Browser;

  beforeAll(async () => {
    tg = await startTelegramHarness({
      env: { PINCER_WEB_ADDR: "127.0.0.1:0" },
      adjust: (config) => {
        config.cron.minEverySeconds = 1;
        // A dollar per thousand tokens: each run costs 0.05.
        config.usage.prices[config.openai.model] = { prompt: 1000, completion: 1000 };
      },
    });
    h = await startWebHarness(tg.app, [tg.channel]);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
    tg.model.respond(reminderModel);
  }, 30_000);

  afterAll(async () => {
    await browser?.close();
    await h?.close();
    await tg?.close();
  });

  const deliveries = (text = "REMINDER:") => tg.telegram.sent.filter((m) => m.text.startsWith(text));
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it("shows the reminder with its next run; Pause, Resume, Run now, Edit and Delete work; history lists each run", async () => {
    tg.telegram.pushUpdate(message(privateChat(42), user(42, "Ada"), { text: "remind me to stretch every 2 s" }));
    await tg.telegram.waitFor(() => tg.telegram.sent.find((m) => m.text.startsWith("Set:")));
    const [job] = await tg.app.store.jobs.listAll();

    const page = await browser.newPage();
    const errors: string[] = [];
    page.on("pageerror", (err) => errors.push(err.message));
    page.on("dialog", (dialog) => void dialog.accept());
    await page.goto(`${h.base}/?token=${encodeURIComponent(h.token)}`);
    const row = page.locator(`#jobs li.job[data-job="${job.id}"]`);
    await row.waitFor();
    expect(await page.locator("#h-jobs").textContent()).toBe("Jobs");
    expect(await row.locator(".text").textContent()).toBe("stretch your legs");
    const rowText = await row.textContent();
    expect(rowText).toContain("every 2 s");
    expect(rowText).toContain("owner telegram 42");
    expect(rowText).toContain("chat telegram:42");
    expect(await row.locator(".next").textContent()).toMatch(/\d{2}:\d{2}, .*\d{2}:\d{2}/);

    // It fires on its own; Pause stops it.
    await until(() => deliveries().length >= 1, "the first delivery");
    await row.getByRole("button", { name: "Pause" }).click();
    await until(async () => (await tg.app.store.jobs.get(job.id))?.pausedAt !== undefined, "the job paused");
    await row.getByRole("button", { name: "Resume" }).waitFor();
    await until(async () => (await runsOf(job.id)).every((r) => r.outcome !== "running"), "the last run over");
    const whilePaused = deliveries().length;
    await sleep(EVERY * 1000 * 2); // two periods: a running job would have fired twice
    expect(deliveries()).toHaveLength(whilePaused);
    expect(await row.textContent()).toContain("paused");

    // Resume brings it back.
    await row.getByRole("button", { name: "Resume" }).click();
    await until(() => deliveries().length > whilePaused, "a delivery after Resume");
    await row.getByRole("button", { name: "Pause" }).click();
    await until(async () => (await tg.app.store.jobs.get(job.id))?.pausedAt !== undefined, "the job paused again");
    await until(async () => (await runsOf(job.id)).every((r) => r.outcome !== "running"), "the last run over");

    // Run now delivers it once to its chat, though the job is paused.
    const beforeRun = deliveries().length;
    await row.getByRole("button", { name: "Run now" }).click();
    await until(() => deliveries().length === beforeRun + 1, "the run asked for");
    expect(deliveries().at(-1)?.chatId).toBe("42");
    await sleep(EVERY * 1000 * 2);
    expect(deliveries()).toHaveLength(beforeRun + 1);

    // An edit to its text shows in the next delivery.
    await row.getByRole("button", { name: "Edit" }).click();
    const form = row.locator("form.job-edit");
    await form.locator("textarea[name=message]").fill("drink a glass of water");
    // Its own stop rules too: a bad one is refused with its reason, and nothing is saved.
    await form.locator("input[name=runTokens]").fill("lots");
    await form.getByRole("button", { name: "Save" }).click();
    await expect
      .poll(() => form.locator(".error").textContent())
      .toBe('Tokens per run must be a whole number above 0 (or none); got "lots".');
    expect((await tg.app.store.jobs.get(job.id))?.message).toBe("stretch your legs");
    await form.locator("input[name=runTokens]").fill("");
    await form.locator("input[name=maxRuns]").fill("500");
    await form.locator("input[name=endsAt]").fill("2099-12-31T18:00");
    await form.locator("input[name=dayCost]").fill("2.5");
    await form.getByRole("button", { name: "Save" }).click();
    await until(async () => (await tg.app.store.jobs.get(job.id))?.message === "drink a glass of water", "the edit");
    expect((await tg.app.store.jobs.get(job.id))?.limits).toEqual({
      maxRuns: 500,
      endsAt: Date.parse("2099-12-31T18:00:00Z"),
      dayCost: 2.5,
    });
    await expect.poll(() => row.locator(".text").textContent()).toBe("drink a glass of water");
    await expect
      .poll(() => row.textContent())
      .toContain("stop rules: maxRuns 500, endsAt 2099-12-31T18:00, dayCost 2.5");
    expect(await row.locator("input[name=maxRuns]").inputValue()).toBe("500");
    await row.getByRole("button", { name: "Run now" }).click();
    await until(() => deliveries("REMINDER: drink a glass of water").length === 1, "the edited text delivered");

    // A bad schedule is refused with its reason, and nothing changes.
    await row.getByRole("button", { name: "Edit" }).click();
    await form.locator("input[name=schedule]").fill("every now and then");
    await form.getByRole("button", { name: "Save" }).click();
    await expect.poll(() => form.locator(".error").textContent()).toContain("is not a period");
    await form.getByRole("button", { name: "Cancel" }).click();

    // The history lists each run with its outcome and cost.
    await until(async () => (await runsOf(job.id)).every((r) => r.outcome === "ok"), "every run recorded as ok");
    const runs = await runsOf(job.id);
    expect(runs.length).toBe(deliveries().length);
    await page.reload();
    await row.locator("details.runs summary").click();
    const historyRows = row.locator("tr.run");
    await expect.poll(() => historyRows.count()).toBe(runs.length);
    const newest = await historyRows.first().textContent();
    expect(newest).toContain("(run now)");
    expect(newest).toContain("ok");
    expect(newest).toContain("$0.0500");
    expect(newest).toContain("REMINDER: drink a glass of water");

    // Delete asks once more (the browser's confirm), then the job is gone; its history stays on the page, with no
    // buttons left.
    await row.getByRole("button", { name: "Delete" }).click();
    await until(async () => (await tg.app.store.jobs.get(job.id)) === undefined, "the job deleted");
    await expect.poll(() => row.textContent(), { timeout: 15_000 }).toContain("finished or deleted");
    expect(await row.locator(".text").textContent()).toBe("drink a glass of water");
    expect(await row.locator("button").count()).toBe(0);
    await row.locator("details.runs summary").click();
    await expect.poll(() => historyRows.count()).toBe(runs.length);
    expect(errors).toEqual([]);
    await page.close();
  }, 120_000);

  async function runsOf(jobId: string) {
    return (await tg.app.store.jobRuns.recent([jobId], 100)).get(jobId) ?? [];
  }
});
