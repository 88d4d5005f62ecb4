import { createHash } from "node:crypto";
import { once } from "node:events";
import { createServer } from "node:http";
import type { Bot } from "grammy";
import type { Update } from "grammy/types";
import type { Level, Logger } from "pino";
import { inOrderPerKey } from "../../src/bus/in-order.js";
import { Context, describe, webhookCallback } from "./library.js";

/** The updates pincer asks for, polled or posted to its webhook. */
const ALLOWED_UPDATES = ["message", "edited_message", "callback_query", "my_chat_member"] as const;

/** What a mode (polling or the webhook) is given for one start-to-stop of its channel. */
export interface ModeRun {
  bot: Bot;
  /** Aborted by stop(): API calls, their retry pauses and the mode's own end with it. */
  signal: AbortSignal;
  /** `signal` as grammy types it (its AbortController polyfill's); Node's own signal is what it uses. */
  apiSignal: Parameters<Bot["api"]["getMe"]>[0];
  /** Runs `attempt` until it works or the channel stops; logs the first failure (at `level`) and the recovery once. */
  persist(failed: string, recovered: string, attempt: () => Promise<void>, level?: Level): Promise<void>;
  sleep(ms: number): Promise<void>;
  log: Logger;
}

/** Our own polling loop: the offset passes an update only once handled (its inbox row written), each chat's in order.
 * While some are being handled (a download takes up to a minute) it polls every second from the first unfinished one,
 * handing on only unseen updates, so no chat waits behind a slow one. Ends once the channel stops. */
export async function pollUpdates(run: ModeRun, pollTimeoutSeconds: number): Promise<void> {
  const { bot, signal, apiSignal, persist, sleep, log } = run;
  const handling = new Map<number, Promise<void>>();
  const inOrder = inOrderPerKey();
  let next = 0; // the first update_id not handed on yet
  /** One update; a failure is logged and skipped (one whose store write was still being retried at stop throws). */
  const handle = async (update: Update) => {
    if (signal.aborted) return;
    await bot.handleUpdate(update).catch((err: unknown) => {
      if (!signal.aborted) log.error({ err: describe(err), updateId: update.update_id }, "telegram update failed");
    });
  };
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
    const timeout = busy ? 0 : pollTimeoutSeconds;
    const updates = await bot.api.getUpdates({ offset, timeout, allowed_updates: ALLOWED_UPDATES }, apiSignal);
    // Sorted and each taken once: a server repeating or reordering updates cannot get one handled twice.
    for (const update of [...updates].sort((a, b) => a.update_id - b.update_id))
      if (update.update_id >= next && !signal.aborted) handOn(update);
  };
  await persist(
    "connecting to Telegram failed; retrying with backoff",
    "connecting to Telegram: working again",
    async () => {
      if (!bot.isInited()) bot.botInfo = await bot.api.getMe(apiSignal);
      await bot.api.deleteWebhook(undefined, apiSignal);
    },
  );
  while (!signal.aborted) {
    const failed = "telegram polling failed; retrying with backoff until it works again";
    await persist(failed, "telegram polling recovered", poll, "warn");
    if (handling.size > 0) await Promise.race([sleep(1000), Promise.all(handling.values())]);
  }
  await Promise.all(handling.values());
}

/** Telegram posts each update to `url`: a server on 127.0.0.1:`port` (behind the reverse proxy that terminates TLS, as
 * Telegram only posts over HTTPS) hands it to the bot, then the webhook is registered, retried until it works. `done`
 * once it is (or the channel stopped); `close` shuts the server. Without a `secret` one is derived from the token, so
 * requests are always checked. */
export async function startWebhook(run: ModeRun, at: { url: string; port: number; secret?: string; token: string }) {
  const { bot, apiSignal, persist, log } = run;
  const { url, port } = at;
  const secret = at.secret ?? createHash("sha256").update(at.token).digest("hex");
  const handle = webhookCallback(bot, "http", {
    secretToken: secret,
    // A 500 after 9 s, not a 200: Telegram sends the update again unless its inbox row was written.
    onTimeout: "throw",
    timeoutMilliseconds: 9000,
  });
  const path = new URL(url).pathname;
  const server = createServer((req, res) => {
    if (req.method !== "POST" || new URL(req.url ?? "/", "http://x").pathname !== path) {
      res.writeHead(404).end();
      return;
    }
    handle(req, res).catch((err: unknown) => {
      log.error({ err }, "telegram webhook request failed");
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  server.listen(port, "127.0.0.1");
  await once(server, "listening");
  const registering = "registering the Telegram webhook";
  const done = persist(`${registering} failed; retrying with backoff`, `${registering}: working again`, async () => {
    if (!bot.isInited()) bot.botInfo = await bot.api.getMe(apiSignal);
    await bot.api.setWebhook(url, { secret_token: secret, allowed_updates: ALLOWED_UPDATES }, apiSignal);
    log.info({ url, port }, "telegram webhook is set");
  });
  const close = async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  };
  return { done, close };
}
