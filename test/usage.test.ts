import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import type { App } from "../src/app.js";
import type { Config } from "../src/config/config.js";
import { recordingChannel, sqliteOf, startedRecording, tempHome, testApp, userMessage } from "./helpers/app.js";
import { fakeModelForFile } from "./helpers/model.js";

// Every model call counted, through the app: the real openai client against the fake model, the real SQLite file.
const fake = fakeModelForFile();

let apps: App[] = [];
afterEach(async () => {
  await Promise.all(apps.map((app) => app.stop()));
  apps = [];
  fake.clearQueue();
});

const PRICES = { "test-model": { prompt: 2, completion: 8, cached: 1 } };

function start(adjust?: (config: Config) => void) {
  return startedRecording(fake.url, apps, tempHome(), (config) => {
    config.openai.model = "test-model";
    config.usage.prices = PRICES;
    adjust?.(config);
  });
}

interface Row {
  session_key: string;
  kind: string;
  model: string;
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number;
  estimated: number;
  cost: number | null;
}

const rows = (app: App) => sqliteOf(app).prepare("SELECT * FROM model_usage ORDER BY id").all() as Row[];

describe("counting model calls", () => {
  it("records the endpoint's usage of a plain reply, cached tokens and the cost at the configured prices", async () => {
    fake.enqueue({
      content: "hi",
      usage: { prompt_tokens: 1000, completion_tokens: 100, prompt_tokens_details: { cached_tokens: 400 } },
    });
    const ctx = await start();
    await ctx.app.bus.publishInbound(userMessage("c", "hello"));
    await ctx.settled();
    expect(ctx.to("c")).toEqual(["hi"]);
    expect(rows(ctx.app)).toEqual([
      expect.objectContaining({
        session_key: "console:c",
        kind: "conversation",
        model: "test-model",
        prompt_tokens: 1000,
        completion_tokens: 100,
        cached_tokens: 400,
        estimated: 0,
      }),
    ]);
    // 600 prompt tokens at 2, 400 cached at 1, 100 completion at 8, per million.
    expect(rows(ctx.app)[0].cost).toBeCloseTo((600 * 2 + 400 + 800) / 1e6, 12);
  });

  it("records a stream's usage chunk, and counts itself (marked estimated) when a stream sends none", async () => {
    const ctx = await start((config) => {
      config.agent.stream = true;
    });
    fake.enqueue({ content: "streamed answer", usage: { prompt_tokens: 321, completion_tokens: 12 } });
    await ctx.app.bus.publishInbound(userMessage("s", "first"));
    await ctx.settled();
    expect(fake.requests[0].stream_options).toEqual({ include_usage: true });
    fake.enqueue({
      chunks: [{ choices: [{ index: 0, delta: { content: "an answer without any usage" }, finish_reason: "stop" }] }],
    });
    await ctx.app.bus.publishInbound(userMessage("s", "second"));
    await ctx.settled();
    expect(ctx.to("s")).toEqual(["streamed answer", "an answer without any usage"]);
    const [counted, estimated] = rows(ctx.app);
    expect(counted).toMatchObject({ prompt_tokens: 321, completion_tokens: 12, estimated: 0 });
    expect(estimated).toMatchObject({ kind: "conversation", model: "test-model", estimated: 1, cached_tokens: 0 });
    // The system prompt alone is hundreds of tokens; the answer is a few words.
    expect(estimated.prompt_tokens).toBeGreaterThan(100);
    expect(estimated.completion_tokens).toBeGreaterThan(2);
    expect(estimated.completion_tokens).toBeLessThan(20);
    expect(estimated.cost).toBeGreaterThan(0);
  });

  it("takes absurd usage (negative, strings, huge) for none: the call is counted by pincer, the answer still goes out", async () => {
    fake.enqueue({ content: "one", usage: { prompt_tokens: -50, completion_tokens: 3 } });
    fake.enqueue({ content: "two", usage: { prompt_tokens: "12", completion_tokens: "3" } });
    fake.enqueue({ content: "three", usage: { prompt_tokens: 1e300, completion_tokens: 1e300 } });
    const ctx = await start();
    for (const text of ["a", "b", "c"]) await ctx.app.bus.publishInbound(userMessage("x", text));
    await ctx.settled();
    expect(ctx.to("x")).toEqual(["one", "two", "three"]);
    const counted = rows(ctx.app);
    expect(counted.map((r) => r.estimated)).toEqual([1, 1, 1]);
    for (const row of counted) {
      expect(row.prompt_tokens).toBeGreaterThan(100);
      expect(row.prompt_tokens).toBeLessThan(100_000);
    }
  });

  it("leaves the cost unknown (not zero) for a model without a price", async () => {
    fake.enqueue({ content: "ok", usage: { prompt_tokens: 10, completion_tokens: 1 } });
    const ctx = await start((config) => {
      config.usage.prices = {};
    });
    await ctx.app.bus.publishInbound(userMessage("p", "hello"));
    await ctx.settled();
    expect(rows(ctx.app)).toEqual([expect.objectContaining({ prompt_tokens: 10, cost: null })]);
  });

  it("answers /usage in the chat at once, without the model: this chat and all, today and this month", async () => {
    fake.respond(() => ({ content: "ok", usage: { prompt_tokens: 1000, completion_tokens: 500 } }));
    const ctx = await start();
    await ctx.app.bus.publishInbound(userMessage("a", "hello"));
    await ctx.app.bus.publishInbound(userMessage("b", "hello"));
    await ctx.settled();
    await ctx.app.bus.publishInbound(userMessage("a", "/usage"));
    await ctx.settled();
    expect(fake.requests).toHaveLength(2);
    const day = new Date().toISOString().slice(0, 10);
    // 1000 prompt tokens at 2 and 500 completion tokens at 8 a million: 0.006 a call.
    expect(ctx.to("a").at(-1)).toBe(
      [
        "Model usage (UTC; costs in the price table's currency):",
        `Today (${day}), this chat: 1,500 tokens, 0.0060`,
        "  conversation 1,500 · test-model 1,500",
        "Today, all chats: 3,000 tokens, 0.0120",
        "  conversation 3,000 · test-model 3,000",
        `This month (${day.slice(0, 7)}), this chat: 1,500 tokens, 0.0060`,
        "  conversation 1,500 · test-model 1,500",
        "This month, all chats: 3,000 tokens, 0.0120",
        "  conversation 3,000 · test-model 3,000",
      ].join("\n"),
    );
  });

  it("shows the prompt's share served from the server's cache on the turn's log line and in /usage, priced as cached", async () => {
    const lines: string[] = [];
    const log = pino({ level: "info" }, { write: (line: string) => void lines.push(line) });
    const app = await testApp(
      fake.url,
      tempHome(),
      {},
      (config) => {
        config.openai.model = "test-model";
        config.usage.prices = PRICES;
        config.memory.consolidate = false;
      },
      log,
    );
    apps.push(app);
    const channel = recordingChannel(app);
    await app.start([channel]);
    // llama-server's way (timings.cache_n beside usage), then OpenAI's (prompt_tokens_details).
    fake.enqueue(
      {
        body: {
          choices: [{ message: { role: "assistant", content: "one" }, finish_reason: "stop" }],
          usage: { prompt_tokens: 1000, completion_tokens: 10 },
          timings: { cache_n: 900, prompt_n: 100 },
        },
      },
      {
        content: "two",
        usage: { prompt_tokens: 1000, completion_tokens: 10, prompt_tokens_details: { cached_tokens: 700 } },
      },
    );
    await app.bus.publishInbound(userMessage("k", "hello"));
    await channel.waitFor(1);
    await app.bus.publishInbound(userMessage("k", "again"));
    await channel.waitFor(2);
    const turns = lines.map((line) => JSON.parse(line)).filter((entry) => entry.msg === "turn finished");
    expect(turns.map((t) => [t.promptTokens, t.cachedTokens])).toEqual([
      [1000, 900],
      [1000, 700],
    ]);
    expect(rows(app).map((r) => r.cached_tokens)).toEqual([900, 700]);
    // 100 uncached at 2, 900 cached at 1, 10 completion at 8, per million.
    expect(rows(app)[0].cost).toBeCloseTo((200 + 900 + 80) / 1e6, 12);
    await app.bus.publishInbound(userMessage("k", "/usage"));
    await channel.waitFor(3);
    expect(channel.sent[2].text).toContain("2,020 tokens (80% of the prompt from the cache), 0.");
  });
});
