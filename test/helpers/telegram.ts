import { Writable } from "node:stream";
import type { Chat, Message, Update, User } from "grammy/types";
import { pino } from "pino";
import { createTelegramChannel, type TelegramTiming } from "../../channels/telegram/telegram-channel.js";
import type { App, AppOptions } from "../../src/app.js";
import type { Channel } from "../../src/bus/channel.js";
import type { Config } from "../../src/config/config.js";
import { mediaDir } from "../../src/paths.js";
import { type FakeOpenAI, startFakeOpenAI } from "../fakes/openai-server.js";
import { type FakeTelegram, startFakeTelegram } from "../fakes/telegram-server.js";
import { tempHome, testApp } from "./app.js";

/** Small delays so retry and typing tests run in milliseconds, not seconds. */
export const FAST_TIMING: TelegramTiming = {
  retry: { attempts: 3, baseDelayMs: 20, maxDelayMs: 100, maxRetryAfterSeconds: 5 },
  typingIntervalMs: 100,
  typingDelayMs: 0,
  pollTimeoutSeconds: 2,
  startWaitMs: 1000,
  reconnectBaseMs: 20,
  reconnectMaxMs: 200,
  downloadTimeoutMs: 10_000,
};

export interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

export interface TelegramHarness {
  telegram: FakeTelegram;
  model: FakeOpenAI;
  app: App;
  channel: Channel;
  home: string;
  logs: LogLine[];
  /** A new channel on the same app, as after a restart of the adapter. */
  restartChannel(): Promise<void>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  allowFrom?: string;
  env?: Record<string, string>;
  adjust?: (config: Config) => void;
  timing?: Partial<TelegramTiming>;
  /** Runs before the channel starts, e.g. to script failures of getMe. */
  beforeStart?: (telegram: FakeTelegram) => void;
  /** More options for createApp (say, shorter MCP timeouts). */
  app?: Omit<AppOptions, "log">;
}

/** pincer with its Telegram channel, a fake Bot API server and a fake model, all on 127.0.0.1. */
export async function startTelegramHarness(options: HarnessOptions = {}): Promise<TelegramHarness> {
  const telegram = await startFakeTelegram();
  const model = await startFakeOpenAI();
  const home = tempHome("pincer-telegram-");
  const logs: LogLine[] = [];
  const log = pino(
    { level: "debug" },
    new Writable({
      write(chunk, _encoding, done) {
        logs.push(JSON.parse(String(chunk)) as LogLine);
        done();
      },
    }),
  );
  const app = await testApp(
    model.url,
    home,
    {
      TELEGRAM_BOT_TOKEN: telegram.token,
      TELEGRAM_API_ROOT: telegram.apiRoot,
      TELEGRAM_ALLOW_FROM: options.allowFrom ?? "42",
      ...options.env,
    },
    (config) => {
      // The outbox sender retries within tens of milliseconds here (seconds by default).
      config.delivery = { ...config.delivery, retryMinSeconds: 0.02, retryMaxSeconds: 0.1 };
      options.adjust?.(config);
    },
    log,
    options.app,
  );
  const makeChannel = () =>
    createTelegramChannel({
      config: app.config,
      bus: app.bus,
      mediaDir: mediaDir(app.config.home),
      log,
      timing: { ...FAST_TIMING, ...options.timing },
    });
  const harness: TelegramHarness = {
    telegram,
    model,
    app,
    channel: makeChannel(),
    home,
    logs,
    async restartChannel() {
      await harness.channel.stop();
      harness.channel = makeChannel();
      await harness.channel.start();
    },
    async close() {
      await harness.channel.stop();
      await app.stop();
      await telegram.close();
      await model.close();
    },
  };
  options.beforeStart?.(telegram);
  await app.start([harness.channel]);
  return harness;
}

export const user = (id: number, firstName = `User${id}`): User => ({ id, is_bot: false, first_name: firstName });

export const privateChat = (id: number): Chat.PrivateChat => ({ id, type: "private", first_name: `User${id}` });

export const groupChat = (id: number, forum = false): Chat.SupergroupChat =>
  ({ id, type: "supergroup", title: "Team", ...(forum ? { is_forum: true } : {}) }) as Chat.SupergroupChat;

/** A message as a test writes it: the fake fills in ids, the date and command/mention entities. */
export function message(
  chat: Chat.PrivateChat | Chat.GroupChat | Chat.SupergroupChat,
  from: User,
  fields: Partial<Message> = {},
): { message: NonNullable<Update["message"]> } {
  return { message: { chat, from, ...fields } as NonNullable<Update["message"]> };
}
