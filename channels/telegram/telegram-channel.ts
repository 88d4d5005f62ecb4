import { setTimeout as pause } from "node:timers/promises";
import type { Logger } from "pino";
import type { Channel, ChannelStatus } from "../../src/bus/channel.js";
import { COMMANDS } from "../../src/bus/commands.js";
import { retryDelay } from "../../src/bus/delivery.js";
import type { Switchboard } from "../../src/bus/switchboard.js";
import { routeOf } from "../../src/bus/types.js";
import { typingIndicator } from "../../src/bus/typing.js";
import type { Config } from "../../src/config/config.js";
import { createInboundHandlers } from "./inbound.js";
import { Api, Bot, describe, HttpError, refusedToken, retryAfterMs } from "./library.js";
import { type ModeRun, pollUpdates, startWebhook } from "./modes.js";
import { createSender, telegramDrafts } from "./outbound.js";
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
  const route = routeOf({ channel: "telegram", account });
  const bot = new Bot(token, { client: { apiRoot: config.telegramApiRoot } });
  // Each raw Bot API call (under the retries): an answer is connected; a network error, 5xx or 401 is down.
  let status: ChannelStatus = { state: "connecting" };
  bot.api.config.use(async (prev, method, payload, signal) => {
    try {
      const result = await prev(method, payload, signal);
      if (result.ok || (result.error_code >= 400 && result.error_code < 500 && result.error_code !== 401))
        status = { state: "connected" };
      else if (result.error_code === 401)
        status = { state: "down", detail: "Telegram rejected TELEGRAM_BOT_TOKEN (401)" };
      else status = { state: "down", detail: `Telegram answered ${result.error_code} ${result.description}` };
      return result;
    } catch (err) {
      if (err instanceof HttpError && !signal?.aborted) status = { state: "down", detail: err.message };
      throw err;
    }
  });
  installRetries(bot.api, timing.retry);
  bot.use(
    createInboundHandlers({
      bus,
      allowedGroups: config.telegram.allowedGroups,
      media: {
        ...config.media,
        token,
        apiRoot: config.telegramApiRoot,
        dir: deps.mediaDir,
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

  let mode: { done: Promise<void>; close?: () => Promise<void> } | undefined;
  // Aborts API calls, their retry pauses and the channel's own, so stop() never waits out an outage.
  let shutdown = new AbortController();
  let offActivity: (() => void) | undefined;
  const sleep = (ms: number) => pause(ms, undefined, { signal: shutdown.signal }).catch(() => {});
  const retryTiming = { baseDelayMs: timing.reconnectBaseMs, maxDelayMs: timing.reconnectMaxMs };

  const persist: ModeRun["persist"] = async (failed, recovered, attempt, level = "error") => {
    for (let failures = 1; !shutdown.signal.aborted; failures++) {
      try {
        await attempt();
        if (failures > 1) log.info({ failures: failures - 1 }, recovered);
        return;
      } catch (err) {
        if (shutdown.signal.aborted) return;
        // A refused token (revoked while running) needs its owner, not patience: an error whatever the outage's level.
        if (failures === 1) log[refusedToken(err) ? "error" : level]({ err: describe(err) }, failed);
        else log.debug({ err: describe(err), failures }, "failed again");
        await sleep(retryDelay(failures, retryTiming, retryAfterMs(err)));
      }
    }
  };

  return {
    name: route,
    async start() {
      shutdown = new AbortController();
      const { signal } = shutdown;
      const run: ModeRun = { bot, signal, apiSignal: signal as unknown as ModeRun["apiSignal"], persist, sleep, log };
      // getMe, not bot.init() (it retries forever): an outage must not hold up other channels' start past startWaitMs.
      const first = bot.api.getMe(run.apiSignal).then(
        (me) => {
          if (!bot.isInited()) bot.botInfo = me;
        },
        (err: unknown) => err ?? new Error("getMe failed"),
      );
      const late = sleep(timing.startWaitMs).then(() => new Error(`no answer within ${timing.startWaitMs} ms`));
      const outcome = await Promise.race([first, late]);
      if (refusedToken(outcome))
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
      const { webhookUrl: url, webhookPort: port, webhookSecret: secret } = config.telegram;
      mode =
        url && !account
          ? await startWebhook(run, { url, port, secret, token })
          : { done: pollUpdates(run, timing.pollTimeoutSeconds) };
    },
    status: () => status,
    async stop() {
      shutdown.abort();
      typing.stopAll();
      offActivity?.();
      await bus.unsubscribeOutbound(route);
      await mode?.done;
      await mode?.close?.();
      status = { state: "stopped" };
    },
  };
}
