/**
 * How much of each prompt a model server must process, turn after turn: pincer against a real llama-server (built by
 * .ci/build-llama-server, the tiny test model, `-c 8192`, one slot) over a conversation whose messages come minutes
 * apart (every one crosses a minute boundary) and that fills the window, beside a reference client replaying the
 * same conversation: the same system prompt, tools and messages, each answer appended, held to the same budget as
 * pincer (the largest prompt pincer sent) and trimming its oldest turns in steps down to half the history's room when
 * it overflows. The server's own counts (`timings.prompt_n`, `timings.cache_n`) are read from its replies.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import type { ChatMessage } from "../src/llm/model.js";
import { createTokenCounter } from "../src/llm/tokens.js";
import { recordingChannel, testApp, userMessage } from "../test/helpers/app.js";
import { type Exchange, findLlamaServer, type LlamaBuild, startLlamaServer } from "../test/helpers/llama-server.js";
import { until } from "../test/helpers/until.js";
import type { Figure } from "./figures.js";

/** What the server did with one request: tokens it processed, tokens it took from its cache, tokens it wrote. */
export interface Processed {
  processed: number;
  cached: number;
  completion: number;
}

export interface CacheRun {
  pincer: Processed[];
  reference: Processed[];
  /** The largest prompt pincer sent, by the server's count: the reference's budget. */
  budget: number;
  /** The cached tokens pincer counted from the server's replies (its usage records: /usage, the page). */
  counted: { promptTokens: number; cachedTokens: number };
}

const MINUTE = 60_000;
/** A cloud price table (a million tokens, USD): OpenAI's gpt-4.1, whose cached input costs a quarter. */
export const CLOUD_PRICE = { model: "gpt-4.1", prompt: 2, cached: 0.5, completion: 8 };

/** The server's counts in a plain reply or the last event of a streamed one. */
function countsOf(exchange: Exchange): Processed {
  const last = exchange.response
    .split("\n")
    .map((line) => line.replace(/^data: /, "").trim())
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as { timings?: Record<string, number>; usage?: Record<string, number> })
    .findLast((body) => body.timings);
  const timings = last?.timings ?? {};
  return { processed: timings.prompt_n ?? 0, cached: timings.cache_n ?? 0, completion: timings.predicted_n ?? 0 };
}

/** The conversation: plain messages (no trigger word of the tiny model), long enough to fill -c 8192 in ~15 turns. */
export function conversation(turns: number): string[] {
  return Array.from({ length: turns }, (_, i) => {
    const topic = ["the garden", "a trip to the coast", "the kitchen shelves", "a birthday", "the bicycle"][i % 5];
    return `Message ${i + 1} about ${topic}: ${"some ordinary words that make this message longer, ".repeat(12)}what do you think?`;
  });
}

/** Runs pincer, then the reference client, against one llama-server; `turns` messages each. */
export async function promptCacheRun(build: LlamaBuild, turns: number): Promise<CacheRun> {
  const server = await startLlamaServer(build, ["--jinja", "-c", "8192"]);
  const home = mkdtempSync(join(tmpdir(), "pincer-bench-cache-"));
  try {
    // pincer: every message a few minutes after the last, on a clock the app reads.
    let offset = 0;
    const app = await testApp(
      server.url,
      home,
      {},
      (config) => {
        // The summaries' calls would share the one slot; counted here is what a turn costs.
        config.memory.consolidate = false;
      },
      pino({ level: "silent" }),
      { now: () => new Date(Date.now() + offset) },
    );
    const channel = recordingChannel(app);
    await app.start([channel]);
    const messages = conversation(turns);
    let counted = { promptTokens: 0, cachedTokens: 0 };
    try {
      for (const [i, text] of messages.entries()) {
        offset += 3 * MINUTE + 7_000;
        await app.bus.publishInbound(userMessage("cache", text));
        await until(() => channel.sent.length > i, `pincer's answer ${i + 1}`, 120_000);
      }
      const [chat] = await app.store.usage.chats(0);
      counted = { promptTokens: Number(chat?.promptTokens ?? 0), cachedTokens: Number(chat?.cachedTokens ?? 0) };
    } finally {
      await app.stop();
    }
    const sent = server.exchanges.filter((e) => e.status === 200);
    const pincer = sent.map(countsOf);
    const budget = Math.max(...pincer.map((p) => p.processed + p.cached));
    server.exchanges.length = 0;
    const reference = await referenceClient(server.url, sent, budget);
    return { pincer, reference, budget, counted };
  } finally {
    await server.stop();
    rmSync(home, { recursive: true, force: true });
  }
}

/**
 * The reference: pincer's first system prompt and tools, each user message as pincer sent it, each answer appended;
 * when the request would pass `budget` (server tokens), its oldest turns go in one step down to half the history's room.
 */
async function referenceClient(url: string, pincer: Exchange[], budget: number): Promise<Processed[]> {
  const counter = createTokenCounter();
  const first = pincer[0].body as { messages: ChatMessage[]; tools?: object[] };
  const system = first.messages[0];
  const tools = first.tools;
  const turns: ChatMessage[][] = [];
  const out: Processed[] = [];
  for (const exchange of pincer) {
    const user = exchange.body.messages.at(-1) as ChatMessage;
    const cost = (history: ChatMessage[][]) => counter.request([system, ...history.flat(), user], tools);
    if (cost(turns) > budget) {
      const fixed = counter.request([system, user], tools);
      const room = budget - fixed;
      while (turns.length > 0 && cost(turns) - fixed > room / 2) turns.shift();
    }
    const messages = [system, ...turns.flat(), user];
    const response = await fetch(`${url}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "reference", messages, tools, max_tokens: 64 }),
    });
    const body = (await response.json()) as {
      choices: Array<{ message: { content: string } }>;
      usage: { prompt_tokens: number };
      timings: Record<string, number>;
    };
    if (!response.ok) throw new Error(`the reference's request was refused: ${JSON.stringify(body).slice(0, 300)}`);
    // Calibrated like pincer's own counter: the server's count of what was sent.
    counter.calibrate(counter.request(messages, tools), body.usage.prompt_tokens);
    out.push({ processed: body.timings.prompt_n, cached: body.timings.cache_n, completion: body.timings.predicted_n });
    turns.push([user, { role: "assistant", content: body.choices[0].message.content }]);
  }
  return out;
}

const sum = (runs: Processed[], key: keyof Processed) => runs.reduce((n, r) => n + r[key], 0);

/** Cost of the requests at CLOUD_PRICE, the cached share at its price. */
export function cloudCost(runs: Processed[]): number {
  const { prompt, cached, completion } = CLOUD_PRICE;
  return runs.reduce((n, r) => n + (r.processed * prompt + r.cached * cached + r.completion * completion) / 1e6, 0);
}

/** The bench rows: tokens processed per turn after the first, and the cost per turn at a cloud price table. */
export async function promptCacheFigures(): Promise<Figure[]> {
  const build = findLlamaServer();
  if (!build) return [];
  const run = await promptCacheRun(build, 30);
  const after = (runs: Processed[]) => runs.slice(1);
  const [p, r] = [after(run.pincer), after(run.reference)];
  const perTurn = (runs: Processed[]) => sum(runs, "processed") / runs.length;
  const share = (runs: Processed[]) => sum(runs, "cached") / (sum(runs, "cached") + sum(runs, "processed"));
  const cents = (runs: Processed[]) => (100 * cloudCost(runs)) / runs.length;
  const turns = `${run.pincer.length} turns 3 min apart, -c 8192`;
  return [
    {
      figure: `prompt tokens llama-server processed per turn after the first (${turns}); reference client: same messages, trimmed in steps to half its room`,
      pincer: `${perTurn(p).toFixed(0)} (${(100 * share(p)).toFixed(1)} % from the cache)`,
      baseline: `${perTurn(r).toFixed(0)} (${(100 * share(r)).toFixed(1)} % from the cache)`,
      ratio: perTurn(p) / perTurn(r),
      target: { max: 1.2 },
      detail: run,
    },
    {
      figure: `cost per turn at ${CLOUD_PRICE.model}'s prices ($${CLOUD_PRICE.prompt}/M prompt, $${CLOUD_PRICE.cached}/M cached, $${CLOUD_PRICE.completion}/M completion) from the counted cached share`,
      pincer: `${cents(p).toFixed(3)} ¢`,
      baseline: `${cents(r).toFixed(3)} ¢`,
      ratio: cents(p) / cents(r),
      target: { max: 1.2 },
    },
  ];
}
