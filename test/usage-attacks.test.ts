/**
 * Budgets attacked (issue 27): reminders due while a budget is used up. The real worker and store,
 * the real openai client against the fake model.
 */
import { afterEach, expect, it } from "vitest";
import type { App } from "../src/app.js";
import type { InboundMessage } from "../src/bus/types.js";
import { sqliteOf, startedRecording, tempHome, userMessage } from "./helpers/app.js";
import { fakeModelForFile } from "./helpers/model.js";

const fake = fakeModelForFile();
let apps: App[] = [];
afterEach(async () => {
  await Promise.all(apps.map((app) => app.stop()));
  apps = [];
  fake.clearQueue();
});

/** A reminder's run as the scheduler publishes it (runMessage). */
function reminderRun(jobId: string, reminder: string): InboundMessage {
  return {
    ...userMessage(
      "a",
      `Scheduled reminder ${jobId} is due now.\nWhat the user asked for when they set it up: ${reminder}`,
    ),
    id: `cron:${jobId}:1`,
    channel: "system",
    senderId: "cron",
    senderName: "scheduler",
    sessionKey: "console:a",
    run: { kind: "cron", jobId, scheduledAt: 1, userId: "user", reminder },
  };
}

it("reminders due over budget are not lost: each one says what it was, though the model is not called", async () => {
  fake.respond(() => ({ content: "ok", usage: { prompt_tokens: 1000, completion_tokens: 500 } }));
  const ctx = await startedRecording(fake.url, apps, tempHome(), (config) => {
    config.usage.dailyTokens = 1000;
  });
  await ctx.app.bus.publishInbound(userMessage("a", "hello"));
  await ctx.settled();
  await ctx.app.bus.publishInbound(reminderRun("r1", "take the pills"));
  await ctx.settled();
  await ctx.app.bus.publishInbound(reminderRun("r2", "call mom"));
  await ctx.settled();
  expect(fake.requests).toHaveLength(1);
  const [, first, second] = ctx.to("a");
  expect(first).toMatch(
    /^A scheduled reminder did not run: the daily token budget is used up .* It was: take the pills$/,
  );
  expect(second).toMatch(/It was: call mom$/);
});

it("a server reporting an impossible prompt count (99 million for a short request) is not believed: the budget is not used up by it", async () => {
  fake.respond(() => ({ content: "ok", usage: { prompt_tokens: 99_000_000, completion_tokens: 5 } }));
  const ctx = await startedRecording(fake.url, apps, tempHome(), (config) => {
    config.usage.dailyTokens = 1_000_000;
  });
  await ctx.app.bus.publishInbound(userMessage("a", "hello"));
  await ctx.settled();
  await ctx.app.bus.publishInbound(userMessage("a", "again"));
  await ctx.settled();
  expect(ctx.to("a")).toEqual(["ok", "ok"]);
  const rows = sqliteOf(ctx.app).prepare("SELECT prompt_tokens, estimated FROM model_usage").all() as Array<{
    prompt_tokens: number;
    estimated: number;
  }>;
  expect(rows).toHaveLength(2);
  for (const row of rows) expect(row).toEqual({ prompt_tokens: expect.any(Number), estimated: 1 });
  expect(rows.every((row) => row.prompt_tokens > 0 && row.prompt_tokens < 100_000)).toBe(true);
});
