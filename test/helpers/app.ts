import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Logger, pino } from "pino";
import { type App, type AppOptions, createApp } from "../../src/app.js";
import type { Channel } from "../../src/bus/channel.js";
import type { InboundMessage, OutboundMessage } from "../../src/bus/types.js";
import { type Config, loadConfig } from "../../src/config/config.js";
import type { Database } from "../../src/store/sqlite/database.js";
import type { SqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { until } from "./until.js";

export function tempHome(prefix = "pincer-test-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** An app wired like the daemon, on a temporary PINCER_HOME, talking to the given fake model. */
export async function testApp(
  modelUrl: string,
  home: string,
  env: Record<string, string> = {},
  adjust?: (config: Config) => void,
  log: Logger = pino({ level: "silent" }),
  options: Omit<AppOptions, "log"> = {},
): Promise<App> {
  const config = loadConfig({
    OPENAI_API_KEY: "test",
    OPENAI_BASE_URL: modelUrl,
    PINCER_HOME: home,
    PINCER_SANDBOX: "none",
    PINCER_TIMEZONE: "UTC",
    LOG_LEVEL: "silent",
    ...env,
  });
  config.agent.modelRetries = 0;
  // Drafts add platform calls most tests do not expect; the streaming tests turn them on.
  config.agent.streamReplies = "off";
  adjust?.(config);
  return createApp(config, { log, ...options });
}

/** The SQLite connection under an app's store, for tests that look at rows directly. */
export function sqliteOf(app: App): Database {
  if (app.store.engine !== "sqlite") throw new Error("this test reads SQLite rows directly");
  return (app.store as SqliteStore).db;
}

/** A channel that records what the agent sends to "console" chats, for tests that drive the bus directly. */
export function recordingChannel(app: App): Channel & { sent: OutboundMessage[]; waitFor(n: number): Promise<void> } {
  const sent: OutboundMessage[] = [];
  const waiters: Array<() => void> = [];
  return {
    name: "console",
    sent,
    async start() {
      await app.bus.subscribeOutbound("console", async (msg) => {
        // Progress notes come and go with timing; tests look at what stays.
        if (msg.kind === "progress") return;
        sent.push(msg);
        for (const wake of waiters.splice(0)) wake();
      });
    },
    async stop() {
      await app.bus.unsubscribeOutbound("console");
    },
    async waitFor(n) {
      // A deadline, not a delay: generous, so a machine busy with other work does not fail a test.
      const deadline = Date.now() + 15_000;
      while (sent.length < n) {
        if (Date.now() > deadline)
          throw new Error(`expected ${n} messages, got ${sent.length}: ${JSON.stringify(sent)}`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 100);
        });
      }
    },
  };
}

/**
 * Waits until nothing waits in the app's inbox or in its outbox for `channel`: every message answered and every answer
 * (with its voice note or parts) sent. Past this point nothing is left that could be sent again.
 */
export async function quiet(app: App, channel: string): Promise<void> {
  await until(
    async () =>
      (await app.store.journal.pendingInbound()).length === 0 &&
      (await app.store.journal.pendingOutbound(channel)).length === 0,
    "the inbox and the outbox to be empty",
  );
}

let counter = 0;

export function userMessage(chatId: string, text: string): InboundMessage {
  counter++;
  return {
    id: `m${counter}`,
    channel: "console",
    chatId,
    senderId: "user",
    senderName: "user",
    text,
    media: [],
    isGroup: false,
    mentionsBot: true,
    receivedAt: Date.now(),
    sessionKey: `console:${chatId}`,
  };
}

/**
 * A started app (consolidation off, a quick circuit breaker) on one recording channel, kept in
 * `apps` to be stopped: `to(chat)` is what a chat got, `settled()` waits until nothing is left to
 * run or send.
 */
export async function startedRecording(url: string, apps: App[], home = tempHome(), adjust?: (config: Config) => void) {
  const app = await testApp(url, home, {}, (config) => {
    config.memory.consolidate = false;
    config.agent.circuitBreaker = { failureThreshold: 3, coolDownSeconds: 0.2 };
    adjust?.(config);
  });
  apps.push(app);
  const channel = recordingChannel(app);
  await app.start([channel]);
  const to = (chat: string) => channel.sent.filter((m) => m.chatId === chat).map((m) => m.text);
  const settled = () =>
    until(
      async () =>
        (await app.store.journal.pendingInbound()).length === 0 &&
        (await app.store.journal.pendingOutbound("console")).length === 0,
      "nothing left to run or send",
    );
  return { app, channel, to, settled };
}
