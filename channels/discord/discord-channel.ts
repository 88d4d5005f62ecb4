import { once } from "node:events";
import type { Logger } from "pino";
import type { Channel } from "../../src/bus/channel.js";
import type { Switchboard } from "../../src/bus/switchboard.js";
import { errorText, routeOf } from "../../src/bus/types.js";
import { typingIndicator } from "../../src/bus/typing.js";
import type { Config } from "../../src/config/config.js";
import { createTapHandler } from "./buttons.js";
import { createInboundHandler } from "./inbound.js";
import { Client, Events, Partials, Routes, Status } from "./library.js";
import { createOutboundHandler, discordDrafts } from "./outbound.js";

const DEFAULT_TUNING = {
  // Discord shows "typing…" for about 10 s after each request, so it is refreshed a little sooner.
  typingIntervalMs: 8000,
  typingDelayMs: 400,
};

export type DiscordTuning = typeof DEFAULT_TUNING;

/** A rate limit longer than this is handed to the outbox sender instead of holding up the channel's sends. */
const LONGEST_INLINE_RATE_LIMIT_MS = 5000;

/** A discord.js gateway client between users and the bus. discord.js resumes a dropped gateway session by itself
 * (Discord then replays what was missed; the inbox drops anything seen before) and waits out REST rate limits. */
export function createDiscordChannel(deps: {
  config: Config;
  bus: Switchboard;
  mediaDir: string; // where received attachments are saved (the sandbox sees it read-only)
  log: Logger;
  tuning?: Partial<DiscordTuning>; // shortened by tests and benchmarks
  /** Another application than DISCORD_BOT_TOKEN's (config `accounts.discord.NAME`): its name and token. */
  account?: { account?: string; token: string };
}): Channel {
  const { config, bus, log } = deps;
  const account = deps.account?.account;
  const token = deps.account?.token ?? config.discordToken;
  const route = routeOf({ channel: "discord", account });
  const tuning = { ...DEFAULT_TUNING, ...deps.tuning };
  const client = new Client({
    intents: ["Guilds", "GuildMessages", "MessageContent", "DirectMessages"],
    // DM channels are not cached before their first message; without this their messages are dropped.
    partials: [Partials.Channel],
    rest: { api: config.discordApiUrl, rejectOnRateLimit: (limit) => limit.retryAfter > LONGEST_INLINE_RATE_LIMIT_MS },
  });
  let running = new AbortController();

  const typing = typingIndicator({
    send: (chatId, threadId) => client.rest.post(Routes.channelTyping(threadId ?? chatId)),
    onError: (err) => log.debug({ err }, "typing indicator failed"),
    intervalMs: tuning.typingIntervalMs,
    delayMs: tuning.typingDelayMs,
  });
  const handleMessage = createInboundHandler({
    bus,
    log,
    guildPolicy: { allowBots: config.discord.allowBots, allowedChannels: config.discord.allowedChannels },
    media: { ...config.media, dir: deps.mediaDir, apiUrl: config.discordApiUrl },
    botId: () => client.user?.id ?? "",
    signal: () => running.signal,
    account,
  });
  const sendOutbound = createOutboundHandler({ rest: client.rest, log });
  let stopActivity: (() => void) | undefined;

  client.on(Events.MessageCreate, handleMessage);
  client.on(
    Events.InteractionCreate,
    createTapHandler({ bus, allowedChannels: config.discord.allowedChannels, log, account }),
  );
  client.on(Events.Error, (err) => log.error({ err }, "Discord client error"));
  client.on(Events.Warn, (message) => log.warn(message));
  client.on(Events.ShardDisconnect, (event) => log.error({ code: event.code }, "Discord gateway closed for good"));
  client.on(Events.ShardReconnecting, () => log.info("Discord gateway connection lost; reconnecting"));
  client.on(Events.ShardResume, (_id, replayed) => log.info({ replayed }, "Discord gateway session resumed"));

  let started = false;
  return {
    name: route,
    status() {
      // discord.js reconnects by itself; anything but Ready is a connection on its way back.
      if (!started) return { state: "stopped" };
      if (client.ws.status === Status.Ready) return { state: "connected" };
      return { state: "connecting", detail: `gateway ${Status[client.ws.status] ?? client.ws.status}` };
    },
    async start() {
      if (!token) throw new Error("DISCORD_BOT_TOKEN is not set");
      running = new AbortController();
      const ready = once(client, Events.ClientReady);
      ready.catch(() => {}); // a failed login rejects below; this only keeps the rejection handled
      try {
        await client.login(token);
        await ready;
      } catch (err) {
        throw new Error(explainLoginFailure(err), { cause: err });
      }
      started = true;
      log.info({ user: client.user?.tag, guilds: client.guilds.cache.size }, "Discord connected");
      stopActivity = bus.onActivity(route, typing.onActivity);
      // Replies left from before a restart go out in the background; start() only promises we listen.
      const drafts = discordDrafts(client.rest, (err) => log.debug({ err }, "could not update a draft"));
      await bus.subscribeOutbound(route, sendOutbound, drafts);
    },
    async stop() {
      started = false;
      running.abort();
      await bus.unsubscribeOutbound(route);
      stopActivity?.();
      typing.stopAll();
      await client.destroy();
    },
  };
}

/** One sentence a user can act on for the ways a first connection fails. */
export function explainLoginFailure(err: unknown): string {
  const message = errorText(err);
  if ((err as { code?: unknown }).code === "TokenInvalid" || /401|unauthorized/i.test(message))
    return "Discord rejected DISCORD_BOT_TOKEN: copy the bot token again from the Developer Portal (Bot → Reset Token).";
  if (/disallowed intents/i.test(message))
    return "Discord refused the connection: enable the Message Content Intent (Developer Portal → Bot → Privileged Gateway Intents).";
  return `Could not connect to Discord: ${message}`;
}
