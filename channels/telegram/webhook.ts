import { createHash } from "node:crypto";
import { once } from "node:events";
import { createServer } from "node:http";
import { webhookCallback } from "./library.js";
import { ALLOWED_UPDATES, type ModeRun } from "./polling.js";

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
