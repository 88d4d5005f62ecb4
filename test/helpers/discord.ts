import { rmSync } from "node:fs";
import { type Logger, pino } from "pino";
import { createDiscordChannel, type DiscordTuning } from "../../channels/discord/discord-channel.js";
import { type App, createApp } from "../../src/app.js";
import { type Config, loadConfig } from "../../src/config/config.js";
import { mediaDir } from "../../src/paths.js";
import {
  FAKE_DISCORD_TOKEN,
  type FakeDiscord,
  type FakeDiscordOptions,
  startFakeDiscord,
} from "../fakes/discord-server.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import { tempHome } from "./app.js";
import type { LogLine } from "./telegram.js";
import { until } from "./until.js";

export interface DiscordHarness {
  discord: FakeDiscord;
  model: FakeOpenAI;
  app: App;
  config: Config;
  /** What pincer logged at warn and above. */
  logs: LogLine[];
  log: Logger;
  /** How a message mentions the bot. */
  mention: string;
}

export interface DiscordHarnessOptions {
  /** The Discord user ids let in (DISCORD_ALLOW_FROM). */
  allowFrom: string;
  /** The fake's guilds, channels and threads, and how it behaves. */
  fake?: FakeDiscordOptions;
  adjust?: (config: Config) => void;
  /** More environment for the config (PINCER_CONFIG, key variables, PINCER_SANDBOX). */
  env?: Record<string, string>;
  tuning?: Partial<DiscordTuning>;
}

/**
 * pincer with its Discord channel (real discord.js) against the fake Discord REST API and gateway
 * and a fake model, all on 127.0.0.1. What it starts is ended by what it pushes onto `cleanups`,
 * which the test file runs in reverse after each test.
 */
export async function startDiscordHarness(
  cleanups: Array<() => Promise<void> | void>,
  options: DiscordHarnessOptions,
): Promise<DiscordHarness> {
  const discord = await startFakeDiscord({ heartbeatIntervalMs: 300, ...options.fake });
  cleanups.push(() => discord.close());
  const model = await startFakeOpenAI();
  cleanups.push(() => model.close());
  const home = tempHome("pincer-discord-");
  cleanups.push(() => rmSync(home, { recursive: true, force: true }));
  const config = loadConfig({
    OPENAI_API_KEY: "test",
    OPENAI_BASE_URL: model.url,
    PINCER_HOME: home,
    DISCORD_BOT_TOKEN: FAKE_DISCORD_TOKEN,
    DISCORD_API_URL: discord.apiUrl,
    DISCORD_ALLOW_FROM: options.allowFrom,
    PINCER_SANDBOX: "none",
    PINCER_TIMEZONE: "UTC",
    ...options.env,
  });
  // The outbox sender retries within tens of milliseconds here (seconds by default).
  config.delivery = { ...config.delivery, retryMinSeconds: 0.05, retryMaxSeconds: 0.2 };
  // Drafts add messages most tests do not expect; the streaming tests turn them on.
  config.agent.streamReplies = "off";
  options.adjust?.(config);
  const logs: LogLine[] = [];
  const log = pino({ level: "warn" }, { write: (line: string) => void logs.push(JSON.parse(line)) });
  const app = await createApp(config, { log });
  const channel = createDiscordChannel({
    config,
    bus: app.bus,
    mediaDir: mediaDir(config.home),
    log,
    tuning: options.tuning,
  });
  await app.start([channel]);
  cleanups.push(() => app.stop().catch(() => {}));
  // Clustered (PINCER_DATABASE_URL), the channel starts once this process holds its role, after start() returned.
  const here = async () => (await app.clusterRoles?.())?.here.includes(`channel:${channel.name}`) ?? true;
  await until(here, "this process to hold the Discord channel's role");
  return { discord, model, app, config, logs, log, mention: `<@${discord.bot.id}>` };
}
