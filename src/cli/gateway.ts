import { setFlagsFromString } from "node:v8";
import type { Logger } from "pino";
import { createApp } from "../app.js";
import type { Channel } from "../bus/channel.js";
import { routeOf } from "../bus/types.js";
import type { Config } from "../config/config.js";
import { mediaDir } from "../paths.js";
import { checkSandbox } from "../tools/exec/sandbox-check.js";
import { mcpStatusPath } from "../tools/mcp/check.js";
import type { ControlPage } from "../web/control-page.js";
import { heapGrowthFlags } from "./heap-growth.js";
import { probeModel } from "./probes.js";

/** `pincer gateway`: the daemon. Runs every configured channel and idles happily with none. */
export async function runGateway(config: Config, log: Logger): Promise<void> {
  const app = await createApp(config, { log, mcpStatusFile: mcpStatusPath(config) });
  const channels: Channel[] = [];
  const media = mediaDir(config.home);
  for (const account of config.accounts) {
    const deps = { config, bus: app.bus, mediaDir: media, log: log.child({ channel: routeOf(account) }), account };
    channels.push(
      account.channel === "telegram"
        ? (await import("../../channels/telegram/telegram-channel.js")).createTelegramChannel(deps)
        : (await import("../../channels/discord/discord-channel.js")).createDiscordChannel(deps),
    );
  }
  for (const channel of ["telegram", "discord"].filter((c) => !config.accounts.some((a) => a.channel === c)))
    log.info(`${channel} is off: ${channel.toUpperCase()}_BOT_TOKEN is not set`);
  if (channels.length === 0) log.warn("no channel is configured; pincer idles until one is (see .env.example)");
  // The web chat is a channel only while its page is served; a page that cannot listen stops nothing else.
  let page: ControlPage | undefined;
  if (config.webAddr) {
    const { startControlPage } = await import("../web/control-page.js");
    const { createWebChannel } = await import("../../channels/web/web-channel.js");
    const web = createWebChannel({ bus: app.bus });
    page = await startControlPage({ app, channels: () => channels, web, log: log.child({ part: "web" }) });
    if (page) channels.push(web);
  } else log.info("the control page is off (PINCER_WEB_ADDR=off)");
  // With no channel nothing else holds the event loop open, and an idle daemon must not exit.
  const keepAlive = setInterval(() => {}, 1 << 30);
  onShutdown(async () => {
    clearInterval(keepAlive);
    await page?.close();
    await app.stop();
  }, log);
  await app.start(channels);
  log.info(
    { channels: channels.map((c) => c.name), model: config.openai.model, home: config.home },
    "pincer is running",
  );
  // Only now: a V8 flag changes the hash Node's built-ins' code cache is checked by (set first, ~30 ms of every start).
  for (const flag of heapGrowthFlags(process.execArgv, process.env.NODE_OPTIONS)) setFlagsFromString(flag);
  // Still at start, after the channels (the check runs bwrap a few times): a broken sandbox, URL or key shows now.
  const [sandbox, model] = await Promise.all([
    checkSandbox(config).catch((err: unknown) => ({
      ok: false,
      sandboxed: false,
      detail: `the sandbox could not be checked: ${err instanceof Error ? err.message : String(err)}`,
    })),
    probeModel(config),
  ]);
  if (!sandbox.ok || !sandbox.sandboxed) log.warn(sandbox.detail);
  if (model.status !== "ok") log.warn({ url: config.openai.baseUrl }, `model endpoint: ${model.detail}`);
}

/** Stops the app once on SIGINT/SIGTERM, so systemd's stop and Ctrl-C leave nothing half-done. */
function onShutdown(stop: () => Promise<void>, log: Logger): void {
  let stopping = false;
  const handler = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, "shutting down");
    stop().then(
      () => process.exit(0),
      (err) => {
        log.error({ err }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, handler);
}
