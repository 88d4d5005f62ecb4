/**
 * Budgets attacked (issue 27): reminders due while a budget is used up. The real worker and store,
 * the real openai client against the fake model.
 */
import { afterEach, expect, it } from "vitest";
import type { App } from "../src/app.js";
import type { InboundMessage } from "../src/bus/types.js";
import { startedRecording, tempHome, userMessage } from "./helpers/app.js";
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
    meta: { kind: "cron", jobId, runId: `cron:${jobId}:1`, userId: "user", reminder },
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
