import { beforeAll, describe, expect, it } from "vitest";
import type { FakeReply } from "./fakes/openai-server.js";
import { CHROMIUM, controlPageInChromium } from "./helpers/browser.js";
import { message, privateChat, user } from "./helpers/telegram.js";
import { until } from "./helpers/until.js";

/**
 * The Jobs section of the control page in Debian's Chromium (as test/dashboard-browser.test.ts): a reminder set in a
 * Telegram chat (real grammy, the fake Bot API, the fake model calling the cron tool) is seen, paused, resumed, run,
 * edited and deleted from the page, and its runs are listed with their outcome and cost.
 */
const SCHEDULER_PREFIX = "[system: scheduler]";
/** The job's period: short, so pausing and resuming are seen in seconds. */
const EVERY = 2;

/** A scheduled run answers with the text the job was given, so an edit shows in the next delivery. */
function reminderModel(request: { messages: Array<{ role: string; content?: unknown }> }): FakeReply {
  const last = request.messages.at(-1);
  const text = typeof last?.content === "string" ? last.content : "";
  if (last?.role === "tool") return { content: `Set: ${text.split("\n")[0]}` };
  if (text.startsWith(SCHEDULER_PREFIX)) {
    const asked = /What the user asked for when they set it up: (.*)/.exec(text)?.[1] ?? "?";
    return { content: `REMINDER: ${asked}`, usage: { prompt_tokens: 40, completion_tokens: 10 } };
  }
  // "a control job": never paused, its runs show the scheduler keeps time while the other job is paused.
  const message = text.includes("control") ? "control" : "stretch your legs";
  return { toolCalls: [{ name: "cron", arguments: { action: "add", message, every_seconds: EVERY } }] };
}

describe.runIf(CHROMIUM !== undefined)("jobs on the control page in Chromium", () => {
  const inChromium = controlPageInChromium({
    adjust: (config) => {
      config.cron.minEverySeconds = 1;
      // A dollar per thousand tokens: each run costs 0.05.
      config.usage.prices[config.openai.model] = { prompt: 1000, completion: 1000 };
    },
  });
  beforeAll(() => inChromium.tg.model.respond(reminderModel));

  const deliveries = (text = "REMINDER: stretch") => inChromium.tg.telegram.sent.filter((m) => m.text.startsWith(text));
  /** Two more runs of the control job delivered: the scheduler went through two periods of the paused job too. */
  const twoPeriods = async () => {
    const seen = deliveries("REMINDER: control").length;
    await until(() => deliveries("REMINDER: control").length >= seen + 2, "two periods of the control job");
  };

  it("shows the reminder with its next run; Pause, Resume, Run now, Edit and Delete work; history lists each run", async () => {
    const { tg } = inChromium;
    tg.telegram.pushUpdate(message(privateChat(42), user(42, "Ada"), { text: "remind me to stretch every 2 s" }));
    await tg.telegram.waitFor(() => tg.telegram.sent.find((m) => m.text.startsWith("Set:")));
    const [job] = await tg.app.store.jobs.listAll();
    tg.telegram.pushUpdate(message(privateChat(42), user(42, "Ada"), { text: "and a control job every 2 s" }));
    await until(() => deliveries("REMINDER: control").length >= 1, "the control job's first delivery");

    const { page, errors } = await inChromium.open();
    page.on("dialog", (dialog) => void dialog.accept());
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
    await twoPeriods(); // a running job would have fired twice
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
    await twoPeriods();
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
    expect(runs.length).toBe(deliveries().length + deliveries("REMINDER: drink").length);
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
    return (await inChromium.tg.app.store.jobRuns.recent([jobId], 100)).get(jobId) ?? [];
  }
});
