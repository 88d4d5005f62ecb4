/**
 * Reply latency on Discord: from a MESSAGE_CREATE leaving the fake gateway to the reply arriving
 * at the fake REST API. pincer (a model that answers at once, in process) against a bare
 * discord.js echo bot, both real discord.js clients on the same fake Discord server, same run.
 * The difference is what pincer adds: access check, inbox journal, the turn, outbox, splitting.
 *
 *   npx tsx bench/discord-latency.ts
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client, Events } from "discord.js";
import { pino } from "pino";
import { clientOptions } from "../channels/discord/discord-channel.js";
import { createDiscordChannel } from "../channels/discord/index.js";
import { createApp } from "../src/app.js";
import { loadConfig } from "../src/config/config.js";
import type { Model } from "../src/llm/model.js";
import { FAKE_DISCORD_TOKEN, type FakeDiscord, startFakeDiscord } from "../test/fakes/discord-server.js";
import { ms, summary } from "./stats.js";

const WARMUP = 20;
const MESSAGES = 200;
const USER = { id: "200000000000000001", username: "bench" };

/** Sends messages one at a time into a DM and returns the latency of each reply, warm-up dropped. */
async function measure(discord: FakeDiscord, dmChannel: string): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < WARMUP + MESSAGES; i++) {
    let sentAt = 0;
    const replied = new Promise<number>((resolve) => {
      const off = discord.onSent((message) => {
        if (message.channelId !== dmChannel) return;
        off();
        resolve(performance.now());
      });
    });
    sentAt = performance.now();
    discord.dispatchMessage({ channelId: dmChannel, author: USER, content: `message ${i}` });
    const at = await replied;
    if (i >= WARMUP) samples.push(at - sentAt);
  }
  return samples;
}

const discord = await startFakeDiscord();

// 1. A bare discord.js echo bot: the floor any Discord bot on this machine pays.
const echo = new Client(clientOptions(discord.apiUrl));
echo.on(Events.MessageCreate, (message) => {
  if (message.author.bot) return;
  void message.reply(`echo: ${message.content}`);
});
const echoReady = new Promise((resolve) => echo.once(Events.ClientReady, resolve));
await echo.login("echo");
await echoReady;
const echoSamples = await measure(discord, "140000000000000001");
await echo.destroy();

// 2. pincer: the real app and Discord channel, with a model that answers at once.
const home = mkdtempSync(join(tmpdir(), "pincer-bench-discord-"));
const config = loadConfig({
  OPENAI_API_KEY: "bench",
  PINCER_HOME: home,
  PINCER_SANDBOX: "none",
  DISCORD_BOT_TOKEN: FAKE_DISCORD_TOKEN,
  DISCORD_API_URL: discord.apiUrl,
  DISCORD_ALLOW_FROM: USER.id,
  LOG_LEVEL: "silent",
});
const instantModel: Model = { complete: async () => ({ content: "ok", toolCalls: [] }) };
const log = pino({ level: "silent" });
const app = createApp(config, { log, model: instantModel });
await app.start([createDiscordChannel({ config, bus: app.bus, pairing: app.pairing, log })]);
const pincerSamples = await measure(discord, "140000000000000002");
await app.stop();
await discord.close();
rmSync(home, { recursive: true, force: true });

const e = summary(echoSamples);
const p = summary(pincerSamples);
console.log(`reply latency over ${MESSAGES} messages each (after ${WARMUP} warm-up), same fake Discord server:`);
console.log(`  bare discord.js echo bot: median ${ms(e.median)}, p90 ${ms(e.p90)}`);
console.log(`  pincer (instant model):   median ${ms(p.median)}, p90 ${ms(p.p90)}`);
console.log(
  `  pincer / echo: ${(p.median / e.median).toFixed(2)}x, overhead ${ms(p.median - e.median)} per reply (median)`,
);
