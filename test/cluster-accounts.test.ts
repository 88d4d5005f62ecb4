/**
 * Two Telegram bots (config `accounts`) on a cluster of two built `pincer gateway` processes on one real PostgreSQL:
 * each bot's connection is a role of its own, polled by one process at a time, and when the process holding one bot is
 * killed (SIGKILL) or paused (SIGSTOP) past its lease, the other takes that bot over while the bot it held already goes
 * on where it was. Each process reaches the fake Bot API servers through a router of its own, so every poll is known
 * by the process that made it; every message is answered once (counted in the sendMessage calls the servers got).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type FakeTelegram, startFakeTelegram } from "./fakes/telegram-server.js";
import { type RoutedCall, startBotRouter } from "./helpers/bot-router.js";
import { clusterOnPostgres } from "./helpers/cluster.js";
import { type Daemon, gatewayOnFakes, killHard, pincer, USER } from "./helpers/daemon.js";
import { hasPostgres } from "./helpers/postgres.js";

const SHOP_TOKEN = "654321:AAH-fake-shop-token_for_tests_012345";
const HOME_ROLE = "channel:telegram";
const SHOP_ROLE = "channel:telegram@shop";
const fakes = gatewayOnFakes();
const { model } = fakes;

type Router = Awaited<ReturnType<typeof startBotRouter>>;
/** One gateway process with the router it reaches the Bot API through. */
type Member = { daemon: Daemon; router: Router };

describe.skipIf(!hasPostgres())("two bots on a cluster of two pincer gateways", () => {
  const accounts = { telegram: { shop: { tokenEnv: "TG_SHOP", agent: "shop", allowFrom: [String(USER)] } } };
  const cluster = clusterOnPostgres(fakes, {
    prefix: "pincer-cluster-accounts-",
    leaseSeconds: 3,
    config: { agents: { shop: {} }, accounts },
  });
  const { query } = cluster;
  let shop: FakeTelegram;
  const routers: Router[] = [];

  beforeEach(async () => {
    shop = await startFakeTelegram({ token: SHOP_TOKEN, bot: { username: "shop_bot", first_name: "Shop" } });
    model.respond((request) => {
      const text = String(request.messages.findLast((m) => m.role === "user")?.content ?? "");
      if (request.messages.at(-1)?.role === "tool") return { content: "set" };
      if (text.includes("[system: scheduler]")) return { content: "REMINDER: water the plants" };
      if (text.includes("remind me")) {
        const at = new Date(Date.now() + 8000).toISOString();
        return { toolCalls: [{ name: "cron", arguments: { action: "add", message: "water the plants", at } }] };
      }
      return { content: `re: ${text.replace(/^[\s\S]*\n/, "")}` };
    });
  });
  afterEach(async () => {
    for (const router of routers.splice(0)) await router.close();
    await shop.close();
  });

  /** A gateway on the shared database and home, reaching both bots through its own router. */
  async function member(): Promise<Member> {
    const router = await startBotRouter({ [fakes.telegram.token]: fakes.telegram.apiRoot, [SHOP_TOKEN]: shop.apiRoot });
    routers.push(router);
    return { daemon: cluster.gateway({ TELEGRAM_API_ROOT: router.url, TG_SHOP: SHOP_TOKEN }), router };
  }

  /** The live lease of a role: the process id in its holder name, and its epoch. */
  async function lease(role: string): Promise<{ pid: number; epoch: string } | undefined> {
    const rows = await query<{ holder: string; epoch: string }>(
      "SELECT holder, epoch FROM cluster_leases WHERE name = $1 AND expires_at > now()",
      [role],
    ).catch(() => []);
    return rows[0] && { pid: Number(rows[0].holder.split(":").at(-2)), epoch: rows[0].epoch };
  }

  const holds = async (m: Member, role: string) => (await lease(role))?.pid === m.daemon.pid;
  const polls = (m: Member, token: string, since = 0) =>
    m.router.calls.filter((c) => c.method === "getUpdates" && c.token === token && c.at >= since);
  const say = (bot: FakeTelegram, text: string) =>
    bot.pushUpdate({
      message: {
        message_id: 0,
        date: 0,
        chat: { id: USER, type: "private", first_name: "Ada" },
        from: { id: USER, is_bot: false, first_name: "Ada" },
        text,
      },
    });
  /** How often the bot was asked to send this answer (every sendMessage call, not only those that succeeded). */
  const answers = (bot: FakeTelegram, text: string) =>
    bot.callsTo("sendMessage").filter((c) => c.params.text === `re: ${text}`).length;
  /**
   * Two processes with one bot each: the first finds the default bot's token refused once (a blip) and leaves that bot
   * to the other, which starts once the first polls the shop's. Returns [the default bot's holder, the shop's].
   */
  async function spread(): Promise<[Member, Member]> {
    fakes.telegram.failNext("getMe", { status: 401, description: "Unauthorized" });
    const first = await member();
    await fakes.until(
      async () => (await holds(first, SHOP_ROLE)) && polls(first, SHOP_TOKEN).length > 0,
      "the first process to poll the shop's bot",
      60_000,
    );
    await fakes.until(
      () => first.daemon.output.join("").includes("could not start a role"),
      "the first process to leave the default bot",
    );
    const second = await member();
    await fakes.until(
      async () => (await holds(second, HOME_ROLE)) && polls(second, fakes.telegram.token).length > 0,
      "the second process to poll the default bot",
      60_000,
    );
    return [second, first];
  }

  /** Every message below answered by its own bot, and once, when nothing is left to take, run or send. */
  async function answeredOnce(texts: { bot: FakeTelegram; text: string }[]): Promise<void> {
    await fakes.until(() => texts.every((t) => answers(t.bot, t.text) >= 1), "every message answered", 60_000);
    await fakes.until(() => shop.pendingUpdates() === 0 && fakes.telegram.pendingUpdates() === 0, "every update taken");
    await cluster.settled();
    for (const { bot, text } of texts) expect(answers(bot, text), text).toBe(1);
    const other = (bot: FakeTelegram) => (bot === shop ? fakes.telegram : shop);
    for (const { bot, text } of texts) expect(answers(other(bot), text), `${text} on the other bot`).toBe(0);
  }

  /** No two processes poll one bot at once: each getUpdates of `a` ended before any of `b`'s began, or began after. */
  function neverTogether(a: RoutedCall[], b: RoutedCall[]): void {
    for (const x of a) {
      for (const y of b) {
        const apart = (x.endedAt ?? Infinity) <= y.at || (y.endedAt ?? Infinity) <= x.at;
        expect(apart, `polls at ${x.at}-${x.endedAt} and ${y.at}-${y.endedAt}`).toBe(true);
      }
    }
  }

  it("polls each bot from one process; the shop's holder killed with SIGKILL, the other takes the shop's bot only", async () => {
    const [homeHolder, shopHolder] = await spread();
    const homeEpoch = (await lease(HOME_ROLE))?.epoch;
    // pincer status names each bot's holder; doctor counts every bot's role, and names one that nobody holds.
    const env = {
      OPENAI_API_KEY: "test",
      TELEGRAM_BOT_TOKEN: fakes.telegram.token,
      TG_SHOP: SHOP_TOKEN,
      PINCER_DATABASE_URL: cluster.url,
      PINCER_WEB_ADDR: "off",
    };
    const status = (await pincer(["status"], cluster.home, env)).stdout;
    for (const [role, m] of [
      [HOME_ROLE, homeHolder],
      [SHOP_ROLE, shopHolder],
    ] as const) {
      expect(status).toMatch(new RegExp(`^  ${role} +\\S+:${m.daemon.pid} \\(epoch \\d+`, "m"));
    }
    expect((await pincer(["doctor"], cluster.home, env)).stdout).toMatch(
      /^\[ok {2}\] cluster: 2 live processes; every role/m,
    );
    const spare = join(cluster.home, "spare.json");
    const config = JSON.parse(readFileSync(join(cluster.home, "config.json"), "utf8"));
    config.accounts.telegram.spare = { tokenEnv: "TG_SPARE" };
    writeFileSync(spare, JSON.stringify(config));
    const more = { ...env, PINCER_CONFIG: spare, TG_SPARE: "777777:AAH-fake-spare-token_for_tests_0123" };
    expect((await pincer(["doctor"], cluster.home, more)).stdout).toMatch(
      /^\[warn\] cluster: 2 live processes; held by nobody: channel:telegram@spare \(/m,
    );
    const before = [
      { bot: fakes.telegram, text: "home-0" },
      { bot: shop, text: "shop-0" },
    ];
    for (const { bot, text } of before) say(bot, text);
    await answeredOnce(before);
    expect(polls(homeHolder, SHOP_TOKEN)).toEqual([]);
    expect(polls(shopHolder, fakes.telegram.token)).toEqual([]);

    await killHard(shopHolder.daemon);
    const killedAt = Date.now();
    const after = [0, 1, 2].flatMap((i) => [
      { bot: shop, text: `shop-after-${i}` },
      { bot: fakes.telegram, text: `home-after-${i}` },
    ]);
    for (const { bot, text } of after) say(bot, text);
    await fakes.until(
      async () => (await holds(homeHolder, SHOP_ROLE)) && polls(homeHolder, SHOP_TOKEN).length > 0,
      "the surviving process to take the shop's bot over",
      30_000,
    );
    await answeredOnce([...before, ...after]);
    // The default bot never moved: the same lease all along, polled by its holder through the takeover.
    expect((await lease(HOME_ROLE))?.epoch).toBe(homeEpoch);
    expect(polls(homeHolder, fakes.telegram.token, killedAt).length).toBeGreaterThan(0);
    expect(polls(shopHolder, fakes.telegram.token)).toEqual([]);
    // The shop's bot changed hands without overlap: the new holder's first poll came after the dead one's last.
    neverTogether(polls(shopHolder, SHOP_TOKEN), polls(homeHolder, SHOP_TOKEN));
    expect(model.requests).toHaveLength(before.length + after.length);
  }, 180_000);

  it("the shop's holder paused (SIGSTOP) past its lease: the other takes the shop's bot; resumed, it polls it no more", async () => {
    const [homeHolder, shopHolder] = await spread();
    const homeEpoch = (await lease(HOME_ROLE))?.epoch;
    say(shop, "shop-0");
    await answeredOnce([{ bot: shop, text: "shop-0" }]);

    shopHolder.daemon.kill("SIGSTOP");
    const texts = [
      { bot: shop, text: "shop-paused" },
      { bot: fakes.telegram, text: "home-paused" },
    ];
    let resumedAt = 0;
    try {
      for (const { bot, text } of texts) say(bot, text);
      await fakes.until(
        async () => (await holds(homeHolder, SHOP_ROLE)) && polls(homeHolder, SHOP_TOKEN).length > 0,
        "the running process to take the shop's bot over",
        30_000,
      );
      await fakes.until(() => answers(shop, "shop-paused") === 1, "the paused-for message answered", 30_000);
    } finally {
      shopHolder.daemon.kill("SIGCONT");
      resumedAt = Date.now();
    }
    const late = { bot: shop, text: "shop-resumed" };
    say(late.bot, late.text);
    await answeredOnce([{ bot: shop, text: "shop-0" }, ...texts, late]);
    // Resumed, it found its lease gone and stopped: not one more poll of the shop's bot, and never the default one.
    expect(polls(shopHolder, SHOP_TOKEN, resumedAt + 1)).toEqual([]);
    expect(polls(shopHolder, fakes.telegram.token)).toEqual([]);
    expect((await lease(HOME_ROLE))?.epoch).toBe(homeEpoch);
    expect(shopHolder.daemon.exitCode ?? shopHolder.daemon.signalCode).toBeNull();
  }, 180_000);

  it("delivers the shop's reminder once, through the shop's bot, after the process holding it and the scheduler was killed", async () => {
    const [homeHolder, shopHolder] = await spread();
    expect(await holds(shopHolder, "scheduler")).toBe(true);
    say(shop, "remind me to water the plants");
    await fakes.until(() => shop.sent.some((m) => m.text === "set"), "the reminder to be set", 30_000);
    await cluster.settled();
    await killHard(shopHolder.daemon);
    const reminders = (bot: FakeTelegram) =>
      bot.callsTo("sendMessage").filter((c) => c.params.text === "REMINDER: water the plants").length;
    expect(reminders(shop), "the reminder came due after the kill").toBe(0);
    await fakes.until(() => reminders(shop) > 0, "the reminder", 60_000);
    await cluster.settled();
    expect(await holds(homeHolder, "scheduler")).toBe(true);
    expect([reminders(shop), reminders(fakes.telegram)]).toEqual([1, 0]);
    expect(fakes.telegram.callsTo("sendMessage")).toEqual([]);
    const run = model.requests.find((r) => JSON.stringify(r.messages).includes("[system: scheduler]"));
    expect(String(run?.messages[0]?.content)).toContain(`Conversation: shop/telegram@shop:${USER}`);
  }, 120_000);
});
