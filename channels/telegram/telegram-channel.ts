import { createHash } from "node:crypto";
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import { setTimeout as pause } from "node:timers/promises";
import type { Bot as GrammyBot } from "grammy";
import type { Update } from "grammy/types";
import type { Level, Logger } from "pino";
import type { Channel } from "../../src/bus/channel.js";
import { COMMANDS } from "../../src/bus/commands.js";
import { retryDelay } from "../../src/bus/delivery.js";
import { inOrderPerKey } from "../../src/bus/in-order.js";
import type { Switchboard } from "../../src/bus/switchboard.js";
import { errorText, routeOf } from "../../src/bus/types.js";
import { typingIndicator } from "../../src/bus/typing.js";
import type { Config } from "../../src/config/config.js";
import { trackConnection } from "./connection.js";
import { telegramDrafts } from "./drafts.js";
import { createInboundHandlers } from "./inbound.js";
import { Api, Bot, Context, GrammyError, retryAfterMs, webhookCallback } from "./library.js";
import { createSender } from "./outbound.js";
import { DEFAULT_RETRY_POLICY, installRetries } from "./retry.js";

/** Timings a deployment never needs to touch; tests and benchmarks shrink them. */
const DEFAULT_TIMING = {
  retry: DEFAULT_RETRY_POLICY,
  // "typing…" shows for ~5 s; it is first shown once a turn ran this long (quick answers need none).
  typingIntervalMs: 4000,
  typingDelayMs: 400,
  pollTimeoutSeconds: 30,
  // How long start() waits for Telegram before going on and connecting in the background.
  startWaitMs: 10_000,
  // The backoff of connecting and polling while Telegram is away.
  reconnectBaseMs: 1000,
  reconnectMaxMs: 60_000,
  // One attachment's download, given up with a note after this.
  downloadTimeoutMs: 60_000,
};

export type TelegramTiming = typeof DEFAULT_TIMING;

const ALLOWED_UPDATES = ["message", "edited_message", "callback_query", "my_chat_member"] as const;

/** Long polling (one chat's updates in order, chats in parallel) or a webhook server, to the bus and back. */
export function createTelegramChannel(deps: {
  config: Config;
  bus: Switchboard;
  mediaDir: string; // where received attachments are saved (the sandbox sees it read-only)
  log: Logger;
  timing?: Partial<TelegramTiming>;
  /** Another bot than TELEGRAM_BOT_TOKEN's (config `accounts.telegram.NAME`): its name and token. */
  account?: { account?: string; token: string };
}): Channel {
  const { config, bus, log } = deps;
  const timing = { ...DEFAULT_TIMING, ...deps.timing };
  const token = deps.account?.token ?? config.telegramToken;
  if (!token) throw new Error("the Telegram channel needs TELEGRAM_BOT_TOKEN");
  const account = deps.account?.account;
  // Each bot is a channel of its own: its outbox rows, typing and cluster role are its route's.
  const route = routeOf({ channel: "telegram", account });
  const bot = new Bot(token, { client: { apiRoot: config.telegramApiRoot } });
  const connection = trackConnection();
  bot.api.config.use(connection.transformer);
  installRetries(bot.api, timing.retry);
  bot.use(
    createInboundHandlers({
      bus,
      allowedGroups: config.telegram.allowedGroups,
      media: {
        token,
        apiRoot: config.telegramApiRoot,
        dir: deps.mediaDir,
        maxBytes: config.media.maxBytes,
        maxAudioSeconds: config.media.maxAudioSeconds,
        timeoutMs: timing.downloadTimeoutMs,
      },
      log,
      signal: () => shutdown.signal,
      account,
    }),
  );
  // One bad update is logged and skipped; it never stops the polling (the webhook's handler).
  bot.catch((err) => log.error({ err: err.error, updateId: err.ctx.update.update_id }, "telegram update failed"));

  // Typing and command registration are best effort: a client without the retry layers, so a failure is one log line
  // and nothing is still being retried after the turn has ended.
  const bestEffort = new Api(token, { apiRoot: config.telegramApiRoot });
  const typing = typingIndicator({
    send: (chatId, threadId) =>
      bestEffort.sendChatAction(chatId, "typing", { message_thread_id: threadId ? Number(threadId) : undefined }),
    intervalMs: timing.typingIntervalMs,
    delayMs: timing.typingDelayMs,
    onError: (err) => log.debug({ err: describe(err) }, "could not send the typing indicator"),
  });

  let stopped = false;
  let webhookServer: Server | undefined;
  let supervisor: Promise<void> | undefined;
  // Aborts API calls, their retry pauses and the channel's own, so stop() never waits out an outage.
  let shutdown = new AbortController();
  // grammy types its signal with its AbortController polyfill; Node's own signal is what it uses.
  const apiSignal = () => shutdown.signal as unknown as Parameters<GrammyBot["api"]["getMe"]>[0];
  let offActivity: (() => void) | undefined;
  const sleep = (ms: number) => pause(ms, undefined, { signal: shutdown.signal }).catch(() => {});
  const retryTiming = { baseDelayMs: timing.reconnectBaseMs, maxDelayMs: timing.reconnectMaxMs };

  /** Runs `attempt` until it works or the channel stops; logs the first failure (at `level`) and the recovery once. */
  async function persist(failed: string, recovered: string, attempt: () => Promise<void>, level: Level = "error") {
    for (let failures = 1; !stopped; failures++) {
      try {
        await attempt();
        if (failures > 1) log.info({ failures: failures - 1 }, recovered);
        return;
      } catch (err) {
        if (stopped) return;
        // A refused token (revoked while running) needs its owner, not patience: an error whatever the outage's level.
        const refused = err instanceof GrammyError && (err.error_code === 401 || err.error_code === 404);
        if (failures === 1) log[refused ? "error" : level]({ err: describe(err) }, failed);
        else log.debug({ err: describe(err), failures }, "failed again");
        await sleep(retryDelay(failures, retryTiming, retryAfterMs(err)));
      }
    }
  }

  /** One update; a failure is logged and skipped (one whose store write was still being retried at stop throws). */
  async function handle(update: Update): Promise<void> {
    if (stopped) return;
    await bot.handleUpdate(update).catch((err: unknown) => {
      if (!stopped) log.error({ err: describe(err), updateId: update.update_id }, "telegram update failed");
    });
  }

  // Our own polling loop: the offset passes an update only once handled (its inbox row written), each chat's in order.
  // While some are being handled (a download takes up to a minute) it polls every second from the first unfinished one,
  // handing on only unseen updates, so no chat waits behind a slow one.
  async function supervisePolling(): Promise<void> {
    const handling = new Map<number, Promise<void>>();
    const inOrder = inOrderPerKey();
    let next = 0; // the first update_id not handed on yet
    const handOn = (update: Update) => {
      next = update.update_id + 1;
      const chat = String(new Context(update, bot.api, bot.botInfo).chat?.id);
      const done = inOrder(chat, () => handle(update));
      handling.set(update.update_id, done);
      void done.then(() => handling.delete(update.update_id));
    };
    const poll = async () => {
      const busy = handling.size > 0;
      const offset = busy ? Math.min(...handling.keys()) : next;
      const timeout = busy ? 0 : timing.pollTimeoutSeconds;
      const updates = await bot.api.getUpdates({ offset, timeout, allowed_updates: ALLOWED_UPDATES }, apiSignal());
      // Sorted and each taken once: a server repeating or reordering updates cannot get one handled twice.
      for (const update of [...updates].sort((a, b) => a.update_id - b.update_id))
        if (update.update_id >= next && !stopped) handOn(update);
    };
    await persist(
      "connecting to Telegram failed; retrying with backoff",
      "connecting to Telegram: working again",
      async () => {
        if (!bot.isInited()) bot.botInfo = await bot.api.getMe(apiSignal());
        await bot.api.deleteWebhook(undefined, apiSignal());
      },
    );
    while (!stopped) {
      await persist(
        "telegram polling failed; retrying with backoff until it works again",
        "telegram polling recovered",
        poll,
        "warn",
      );
      if (handling.size > 0) await Promise.race([sleep(1000), Promise.all(handling.values())]);
    }
    await Promise.all(handling.values());
  }

  async function startWebhook(url: string, port: number): Promise<void> {
    // Without a configured secret one is derived from the token, so requests are always checked.
    const secret = config.telegram.webhookSecret ?? createHash("sha256").update(String(token)).digest("hex");
    const handle = webhookCallback(bot, "http", {
      secretToken: secret,
      // A 500 after 9 s, not a 200: Telegram sends the update again unless its inbox row was written.
      onTimeout: "throw",
      timeoutMilliseconds: 9000,
    });
    const path = new URL(url).pathname;
    webhookServer = createServer((req, res) => {
      if (req.method !== "POST" || new URL(req.url ?? "/", "http://x").pathname !== path) {
        res.writeHead(404).end();
        return;
      }
      handle(req, res).catch((err: unknown) => {
        log.error({ err }, "telegram webhook request failed");
        if (!res.headersSent) res.writeHead(500).end();
      });
    });
    // Telegram only posts over HTTPS, so a reverse proxy on this host terminates TLS and forwards here.
    webhookServer.listen(port, "127.0.0.1");
    await once(webhookServer, "listening");
    const registering = "registering the Telegram webhook";
    supervisor = persist(`${registering} failed; retrying with backoff`, `${registering}: working again`, async () => {
      if (!bot.isInited()) bot.botInfo = await bot.api.getMe(apiSignal());
      await bot.api.setWebhook(url, { secret_token: secret, allowed_updates: ALLOWED_UPDATES }, apiSignal());
      log.info({ url, port }, "telegram webhook is set");
    });
  }

  return {
    name: route,
    async start() {
      stopped = false;
      shutdown = new AbortController();
      // getMe, not bot.init() (it retries forever): an outage must not hold up other channels' start past startWaitMs.
      const first = bot.api.getMe(apiSignal()).then(
        (me) => {
          if (!bot.isInited()) bot.botInfo = me;
        },
        (err: unknown) => err ?? new Error("getMe failed"),
      );
      const late = sleep(timing.startWaitMs).then(() => new Error(`no answer within ${timing.startWaitMs} ms`));
      const outcome = await Promise.race([first, late]);
      if (outcome instanceof GrammyError && (outcome.error_code === 401 || outcome.error_code === 404))
        throw new Error(
          `Telegram rejected ${account ? `the token of accounts.telegram.${account}` : "TELEGRAM_BOT_TOKEN"} (${outcome.error_code} ${outcome.description}): check the token BotFather gave you.`,
        );
      if (outcome) log.warn({ err: describe(outcome) }, "telegram is not reachable yet; pincer keeps trying");
      if (bot.isInited()) log.info({ username: bot.botInfo.username }, "telegram bot connected");
      offActivity = bus.onActivity(route, typing.onActivity);
      const drafts = telegramDrafts(bestEffort, (err) => log.debug({ err: describe(err) }, "could not update a draft"));
      await bus.subscribeOutbound(route, createSender(bot.api, log), drafts);
      bestEffort
        .setMyCommands(COMMANDS.map((c) => ({ command: c.name, description: c.description })))
        .catch((err: unknown) => log.warn({ err: describe(err) }, "could not register the bot's commands"));
      // The webhook's one URL and port are the default bot's; another bot polls.
      const { webhookUrl, webhookPort } = config.telegram;
      if (webhookUrl && !account) await startWebhook(webhookUrl, webhookPort);
      else supervisor = supervisePolling();
    },
    status: () => connection.status(),
    async stop() {
      stopped = true;
      shutdown.abort();
      typing.stopAll();
      offActivity?.();
      await bus.unsubscribeOutbound(route);
      await supervisor;
      if (webhookServer) {
        webhookServer.closeAllConnections();
        await new Promise((resolve) => webhookServer?.close(resolve));
      }
      connection.stopped();
    },
  };
}

/** The platform's own words: grammy's errors carry Telegram's code and description. */
function describe(err: unknown): string {
  return err instanceof GrammyError ? `${err.error_code} ${err.description}` : errorText(err);
}
