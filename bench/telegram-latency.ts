/**
 * Reply latency of pincer's Telegram channel against a bare grammy echo bot, both talking to the
 * same fake Bot API server in the same run. pincer's model is the fake OpenAI server answering at
 * once, so the difference is pincer's own overhead: update handling, inbox/outbox in SQLite, the
 * agent turn, the typing indicator, markdown rendering, and the HTTP call to the model.
 *
 * Run: npx tsx bench/telegram-latency.ts [messages]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Bot } from "grammy";
import { pino } from "pino";
import { createTelegramChannel } from "../channels/telegram/index.js";
import { createApp } from "../src/app.js";
import { loadConfig } from "../src/config/config.js";
import { startFakeOpenAI } from "../test/fakes/openai-server.js";
import { type FakeTelegram, startFakeTelegram } from "../test/fakes/telegram-server.js";

const MESSAGES = Number(process.argv[2] ?? 200);
const WARMUP = 20;

/** Sends messages one at a time to `chatId` and returns each reply's latency in milliseconds. */
async function measure(telegram: FakeTelegram, chatId: number, count: number): Promise<number[]> {
  const latencies: number[] = [];
  for (let i = 0; i < count; i++) {
    const before = telegram.sent.length;
    const start = performance.now();
    telegram.pushUpdate({
      message: {
        chat: { id: chatId, type: "private", first_name: "Bench" },
        from: { id: chatId, is_bot: false, first_name: "Bench" },
        text: `ping ${i}`,
      } as never,
    });
    await telegram.waitFor(() => telegram.sent.slice(before).find((m) => m.chatId === String(chatId)), 10_000);
    latencies.push(performance.now() - start);
  }
  return latencies;
}

/** Confirms every update handed out so far, so the next bot starts with an empty queue. */
async function drainUpdates(telegram: FakeTelegram): Promise<void> {
  const response = await fetch(`${telegram.apiRoot}/bot${telegram.token}/getUpdates?offset=${2 ** 31 - 1}&timeout=0`);
  await response.arrayBuffer();
}

function stats(values: number[]): { median: number; p90: number; mean: number } {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { median: at(0.5), p90: at(0.9), mean: values.reduce((a, b) => a + b, 0) / values.length };
}

async function benchEcho(telegram: FakeTelegram): Promise<number[]> {
  const bot = new Bot(telegram.token, { client: { apiRoot: telegram.apiRoot } });
  bot.on("message:text", (ctx) => ctx.reply(ctx.message.text));
  const started = new Promise<void>((resolve) => {
    void bot.start({ onStart: () => resolve(), timeout: 30 });
  });
  await started;
  await measure(telegram, 1001, WARMUP);
  const latencies = await measure(telegram, 1001, MESSAGES);
  await bot.stop();
  return latencies;
}

async function benchPincer(telegram: FakeTelegram): Promise<number[]> {
  const model = await startFakeOpenAI();
  model.respond(() => ({ content: "pong" }));
  const home = mkdtempSync(join(tmpdir(), "pincer-bench-"));
  const config = loadConfig({
    OPENAI_API_KEY: "bench",
    OPENAI_BASE_URL: model.url,
    PINCER_HOME: home,
    PINCER_SANDBOX: "none",
    PINCER_TIMEZONE: "UTC",
    TELEGRAM_BOT_TOKEN: telegram.token,
    TELEGRAM_API_ROOT: telegram.apiRoot,
    TELEGRAM_ALLOW_FROM: "*",
  });
  const log = pino({ level: "silent" });
  const app = createApp(config, { log });
  const channel = createTelegramChannel({ config, bus: app.bus, pairing: app.pairing, log });
  await app.start([channel]);
  try {
    await measure(telegram, 2002, WARMUP);
    return await measure(telegram, 2002, MESSAGES);
  } finally {
    await app.stop();
    await model.close();
    rmSync(home, { recursive: true, force: true });
  }
}

const telegram = await startFakeTelegram();
try {
  const echo = await benchEcho(telegram);
  await drainUpdates(telegram);
  const pincer = await benchPincer(telegram);
  const e = stats(echo);
  const p = stats(pincer);
  const fmt = (n: number) => `${n.toFixed(2)} ms`;
  console.log(
    `Telegram reply latency, ${MESSAGES} sequential messages each (after ${WARMUP} warm-up), same fake Bot API server`,
  );
  console.log(`  bare grammy echo bot : median ${fmt(e.median)}, p90 ${fmt(e.p90)}, mean ${fmt(e.mean)}`);
  console.log(`  pincer (instant model): median ${fmt(p.median)}, p90 ${fmt(p.p90)}, mean ${fmt(p.mean)}`);
  console.log(`  overhead: +${fmt(p.median - e.median)} at the median, ratio ${(p.median / e.median).toFixed(2)}x`);
} finally {
  await telegram.close();
}
