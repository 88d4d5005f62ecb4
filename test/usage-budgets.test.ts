import { afterEach, describe, expect, it } from "vitest";
import type { App } from "../src/app.js";
import type { InboundMessage } from "../src/bus/types.js";
import type { Config } from "../src/config/config.js";
import { withoutTurnFacts } from "../src/turn-facts.js";
import { startedRecording, tempHome, userMessage } from "./helpers/app.js";
import { fakeModelForFile } from "./helpers/model.js";

// The budgets, met as a user meets them: through the app, the real openai client and the fake model.
const fake = fakeModelForFile();

let apps: App[] = [];
afterEach(async () => {
  await Promise.all(apps.map((app) => app.stop()));
  apps = [];
  fake.clearQueue();
});

const start = (usage: Partial<Config["usage"]>) =>
  startedRecording(fake.url, apps, tempHome(), (config) => {
    config.openai.model = "m";
    config.usage = { prices: {}, ...usage };
  });

/** A message pincer addresses to itself for chat `chatId`, as the scheduler and the heartbeat do. */
function systemRun(chatId: string, kind: "cron" | "heartbeat", n: number): InboundMessage {
  return {
    ...userMessage(chatId, `[system] run ${n}`),
    id: `${kind}:${n}`,
    channel: "system",
    senderId: kind,
    run: kind === "cron" ? { kind, jobId: "j", scheduledAt: n } : { kind, deliverTo: `console:${chatId}` },
  };
}

const spend = (app: App, sessionKey: string, tokens: number) =>
  app.store.usage.record({
    sessionKey,
    kind: "conversation",
    model: "m",
    promptTokens: tokens,
    completionTokens: 0,
    cachedTokens: 0,
    estimated: false,
    at: Date.now(),
  });

describe("a token budget", () => {
  it("reached mid-turn: the second model call of a tool-using turn is not made, the turn says so and the message is answered", async () => {
    fake.enqueue({
      toolCalls: [{ name: "list_dir", arguments: {} }],
      usage: { prompt_tokens: 900, completion_tokens: 20 },
    });
    const ctx = await start({ dailyTokens: 500 });
    await ctx.app.bus.publishInbound(userMessage("t", "look around"));
    await ctx.settled();
    expect(fake.requests).toHaveLength(1);
    const [cut] = ctx.to("t");
    expect(cut).toMatch(
      /^I had to stop before finishing: the daily token budget is used up \(920 of 500 tokens, usage\.dailyTokens\)\. It resets .* 00:00 UTC/,
    );
    // The round that ran is kept with the message: nothing is lost.
    const stored = await ctx.app.store.conversations.recent("console:t", 10_000);
    expect(stored.map((m) => m.role)).toEqual(["user", "assistant", "tool"]);

    // The next message is told once, with when the budget resets; later ones are kept, not answered.
    await ctx.app.bus.publishInbound(userMessage("t", "hello?"));
    await ctx.app.bus.publishInbound(userMessage("t", "anyone?"));
    await ctx.settled();
    expect(ctx.to("t")).toHaveLength(2);
    expect(ctx.to("t")[1]).toMatch(
      /^I cannot answer now: the daily token budget is used up .*It resets .*kept but not answered\.$/,
    );
    expect(fake.requests).toHaveLength(1);
    // Kept as the model would have seen them: the user's words, then the turn's time as metadata.
    const contents = (await ctx.app.store.conversations.recent("console:t", 10_000)).map((m) => m.content ?? "");
    expect(contents.slice(-2).map(withoutTurnFacts)).toEqual(["hello?", "anyone?"]);
  });

  it("per chat stops that chat only", async () => {
    fake.respond(() => ({ content: "fine" }));
    const ctx = await start({ chatDailyTokens: 1000 });
    await spend(ctx.app, "console:big", 5000);
    await ctx.app.bus.publishInbound(userMessage("big", "hi"));
    await ctx.app.bus.publishInbound(userMessage("small", "hi"));
    await ctx.settled();
    expect(ctx.to("big")[0]).toMatch(/^I cannot answer now: this chat's daily token budget is used up \(5000 of 1000/);
    expect(ctx.to("small")).toEqual(["fine"]);
  });

  it("holds back reminders and the heartbeat: each kind says so in its chat once, the model is not asked", async () => {
    fake.respond(() => ({ content: "should not be asked" }));
    const ctx = await start({ dailyTokens: 100 });
    await spend(ctx.app, "console:elsewhere", 100);
    for (const n of [1, 2]) await ctx.app.bus.publishInbound(systemRun("r", "cron", n));
    for (const n of [1, 2]) await ctx.app.bus.publishInbound(systemRun("r", "heartbeat", n));
    await ctx.settled();
    expect(fake.requests).toHaveLength(0);
    const said = ctx.to("r");
    expect(said).toHaveLength(2);
    expect(said[0]).toMatch(/^A scheduled reminder did not run: the daily token budget is used up .*It resets /);
    expect(said[1]).toMatch(/^The heartbeat did not run: /);
    expect(await ctx.app.store.journal.pendingInbound()).toEqual([]);
  });
});

describe("a cost budget", () => {
  it("counts the cost at the configured prices and stops at the limit", async () => {
    fake.respond(() => ({ content: "priced", usage: { prompt_tokens: 50_000, completion_tokens: 0 } }));
    const ctx = await start({ monthlyCost: 1, prices: { m: { prompt: 20, completion: 20 } } });
    await ctx.app.bus.publishInbound(userMessage("c", "one"));
    await ctx.settled();
    await ctx.app.bus.publishInbound(userMessage("c", "two"));
    await ctx.settled();
    expect(ctx.to("c")[0]).toBe("priced");
    expect(ctx.to("c")[1]).toMatch(
      /^I cannot answer now: the monthly cost budget is used up \(1\.00 of 1, usage\.monthlyCost\)\. It resets .*-01 00:00 UTC/,
    );
    expect(fake.requests).toHaveLength(1);
  });
});
