/**
 * Issue 40: people, roles and linked accounts, end to end: the real grammy and discord.js against the fake Bot API,
 * the fake Discord and the fake model, on both engines (the SQLite file; PostgreSQL in clustered mode), and the built
 * `pincer people` CLI on the same store. The owner is named in TELEGRAM_ALLOW_FROM; everyone on Discord is let in by
 * `*` and so is a guest, whose role (config `roles.guest.tools`) lacks `exec`.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createDiscordChannel } from "../channels/discord/discord-channel.js";
import { createTelegramChannel } from "../channels/telegram/telegram-channel.js";
import type { App } from "../src/app.js";
import { mediaDir } from "../src/paths.js";
import { FAKE_DISCORD_TOKEN, type FakeDiscord, type FakeUser, startFakeDiscord } from "./fakes/discord-server.js";
import type { ChatRequest } from "./fakes/openai-server.js";
import { type FakeTelegram, startFakeTelegram } from "./fakes/telegram-server.js";
import { tempHome, testApp } from "./helpers/app.js";
import { pincer } from "./helpers/daemon.js";
import { ENGINES, engineEnv } from "./helpers/engines.js";
import { fakeModelForFile } from "./helpers/model.js";
import { FAST_TIMING, groupChat, message, privateChat, user } from "./helpers/telegram.js";
import { until } from "./helpers/until.js";

const model = fakeModelForFile();
const GUILD = "110000000000000001";
const GENERAL = "120000000000000001";
const DM = "140000000000000001";
const MALLORY_DM = "140000000000000002";
const ADA: FakeUser = { id: "200000000000000001", username: "ada" };
const MALLORY: FakeUser = { id: "200000000000000002", username: "mallory" };
const toolsOf = (r: ChatRequest) => (r.tools ?? []).map((t) => t.function.name);
const lastUser = (r: ChatRequest) => String(r.messages.findLast((m) => m.role === "user")?.content ?? "");

describe.each(ENGINES)("people on %s", (engine) => {
  const database = engineEnv(engine);
  let telegram: FakeTelegram;
  let discord: FakeDiscord;
  let app: App | undefined;
  let cli: (args: string[]) => ReturnType<typeof pincer>;

  beforeAll(async () => {
    telegram = await startFakeTelegram();
    discord = await startFakeDiscord({
      guilds: [{ id: GUILD, name: "home", channels: [{ id: GENERAL, name: "general" }] }],
      heartbeatIntervalMs: 300,
    });
  });
  afterAll(async () => {
    await Promise.all([telegram.close(), discord.close()]);
  });
  afterEach(async () => {
    await app?.stop();
    app = undefined;
    telegram.sent.length = 0;
    discord.sent.length = 0;
  });

  async function start(): Promise<App> {
    const home = tempHome("pincer-people-");
    const configFile = join(home, "config.json");
    const roles = {
      guest: { tools: ["read_file", "web_*", "memory_*", "cron"], usage: { dailyTokens: 500 } },
      member: { approvals: { exec: "ask" as const, tools: ["read_file"] } },
    };
    writeFileSync(configFile, JSON.stringify({ roles }));
    const env = {
      PINCER_CONFIG: configFile,
      TELEGRAM_BOT_TOKEN: telegram.token,
      TELEGRAM_API_ROOT: telegram.apiRoot,
      TELEGRAM_ALLOW_FROM: "42,*",
      DISCORD_BOT_TOKEN: FAKE_DISCORD_TOKEN,
      DISCORD_API_URL: discord.apiUrl,
      DISCORD_ALLOW_FROM: "*",
      ...(await database.env()),
    };
    const started = await testApp(model.url, home, env);
    cli = (args) => pincer(args, home, { ...env, OPENAI_API_KEY: "test", PINCER_SANDBOX: "none" });
    const log = pino({ level: "silent" });
    const { config, bus } = started;
    const connections = discord.connections.length;
    await started.start([
      createTelegramChannel({ config, bus, mediaDir: mediaDir(config.home), log, timing: FAST_TIMING }),
      createDiscordChannel({ config, bus, mediaDir: mediaDir(config.home), log }),
    ]);
    app = started;
    // Clustered, the Discord connection starts once its role is taken: a message before it would reach nobody.
    await until(() => discord.connections.length > connections && discord.liveConnections > 0, "Discord connected");
    return started;
  }

  const telegramSays = (text: string, from = 42) =>
    telegram.pushUpdate(message(privateChat(from), user(from, "Ada"), { text }));
  const toTelegram = (starts: string) =>
    until(() => telegram.sent.find((m) => m.text.startsWith(starts)), `"${starts}" on Telegram`, 20_000);
  const toDiscord = (channelId: string, starts: string, after = 0) =>
    until(
      () => discord.sent.slice(after).find((m) => m.channelId === channelId && m.content.startsWith(starts)),
      `"${starts}" in ${channelId}`,
      20_000,
    );

  it("never offers a guest's turn a tool their role lacks, in a DM or a group, each writer with their own rights", async () => {
    const started = await start();
    model.respond((request) => ({ content: `tools: ${toolsOf(request).length}` }));
    telegramSays("hello");
    await toTelegram("tools:");
    const owners = toolsOf(model.requests[0]);
    expect(owners).toContain("exec");
    for (const text of ["hi", "and again"]) {
      const before = discord.sent.length;
      discord.dispatchMessage({ channelId: DM, author: ADA, content: text });
      await toDiscord(DM, "tools:", before);
    }
    const [first, second] = model.requests.slice(1).map(toolsOf);
    expect(first).not.toContain("exec");
    expect(first).toContain("read_file");
    expect(first.every((name) => /^(read_file|web_.*|memory_.*|cron)$/.test(name))).toBe(true);
    // The same list each turn of theirs: the prompt cache keeps its prefix.
    expect(second).toEqual(first);

    // In a guild channel: Mallory (a guest) and Ada, whom the owner made an owner, each with their own tools.
    const ada = await started.store.people.identify("main", "discord", ADA.id, "ada");
    expect(await started.store.people.setRole(ada.id, "owner")).toBe(true);
    model.requests.length = 0;
    model.respond((request) => ({ content: `for ${lastUser(request).includes("mallory") ? "mallory" : "ada"}` }));
    const mention = `<@${discord.bot.id}>`;
    discord.dispatchMessage({
      channelId: GENERAL,
      guildId: GUILD,
      author: MALLORY,
      content: `${mention} mallory here`,
    });
    await toDiscord(GENERAL, "for mallory");
    discord.dispatchMessage({ channelId: GENERAL, guildId: GUILD, author: ADA, content: `${mention} ada here` });
    await toDiscord(GENERAL, "for ada");
    const byWriter = Object.fromEntries(model.requests.map((r) => [lastUser(r).includes("mallory"), toolsOf(r)]));
    expect(byWriter.true).not.toContain("exec");
    expect(byWriter.false).toContain("exec");
    // A guest has no /model; the role `owner` set for Ada has.
    discord.dispatchMessage({ channelId: MALLORY_DM, author: MALLORY, content: "/model" });
    await toDiscord(MALLORY_DM, "Only the owner");
    discord.dispatchMessage({ channelId: DM, author: ADA, content: "/model" });
    await toDiscord(DM, "This chat uses");
  }, 90_000);

  it("runs a guest's reminder with the guest's role: no tool the role lacks, though no one wrote it", async () => {
    await start();
    const at = new Date(Date.now() + 1500).toISOString();
    model.respond((request) => {
      const last = request.messages.at(-1);
      if (last?.role === "tool") return { content: "set" };
      if (String(last?.content).includes("remind me")) {
        return { toolCalls: [{ name: "cron", arguments: { action: "add", message: "stretch", at } }] };
      }
      return { content: "Time to stretch!" };
    });
    discord.dispatchMessage({ channelId: MALLORY_DM, author: MALLORY, content: "remind me to stretch" });
    await toDiscord(MALLORY_DM, "set");
    await toDiscord(MALLORY_DM, "Time to stretch!");
    const run = model.requests.at(-1) as ChatRequest;
    expect(toolsOf(run)).toContain("read_file");
    expect(toolsOf(run)).not.toContain("exec");
  }, 60_000);

  it("holds a guest to their role's budget (roles.guest.usage) in every chat they write in; the owner goes on", async () => {
    await start();
    model.respond(() => ({ content: "ok", usage: { prompt_tokens: 400, completion_tokens: 200 } }));
    discord.dispatchMessage({ channelId: MALLORY_DM, author: MALLORY, content: "one" });
    await toDiscord(MALLORY_DM, "ok");
    const mention = `<@${discord.bot.id}>`;
    discord.dispatchMessage({ channelId: GENERAL, guildId: GUILD, author: MALLORY, content: `${mention} two` });
    const refused = await toDiscord(GENERAL, "I cannot answer now: your daily token budget is used up");
    expect(refused.content).toContain("600 of 500 tokens, your role's usage");
    telegramSays("owner here");
    await toTelegram("ok");
    expect(model.requests).toHaveLength(2);
  }, 60_000);

  it("has the owner decide a role's approvals (roles.member.approvals): in the owner's chat, or on the control page; the writer only waits", async () => {
    const started = await start();
    for (const id of [`discord:${MALLORY.id}`, "telegram:7"]) {
      const [route, userId] = id.split(":");
      await started.store.people.identify("main", route, userId, "someone");
      expect(await started.store.people.setRole(id, "member")).toBe(true);
    }
    model.respond((request) => {
      const last = request.messages.at(-1);
      if (last?.role === "tool") return { content: `done: ${String(last.content).trim()}` };
      if (String(last?.content).includes("notes"))
        return { toolCalls: [{ name: "read_file", arguments: { path: "n.txt" } }] };
      return { toolCalls: [{ name: "exec", arguments: { command: "echo hi" } }] };
    });
    // Discord names no owner (`*` only): the member's prompt shows in her chat, her tap counts for nothing there.
    discord.dispatchMessage({ channelId: MALLORY_DM, author: MALLORY, content: "read my notes" });
    const asked = await until(
      () => discord.sent.find((m) => m.channelId === MALLORY_DM && m.components?.length),
      "the approval prompt",
      20_000,
    );
    expect(asked.content).toContain("The owner decides on the control page");
    const mallorysTap = discord.tap(asked, "Allow once", MALLORY);
    await until(() => discord.interactions.get(mallorysTap)?.content === "This is not yours to decide.", "refused");
    const [pending] = await started.store.approvals.pending();
    expect((await started.approvals?.decide(pending.id, "deny", "the control page"))?.taken).toBe(true);
    await toDiscord(MALLORY_DM, "done: Error: denied");

    // On Telegram the owner (42) is asked in their own chat; Bob (7), a member, is told it waits for the owner.
    telegram.pushUpdate(message(privateChat(7), user(7, "Bob"), { text: "say hi" }));
    const prompt = await until(() => telegram.sent.find((m) => m.chatId === "42" && m.keyboard), "the owner's prompt");
    expect(prompt.text).toContain("for telegram:7");
    expect(prompt.text).toContain("echo hi");
    await until(
      () => telegram.sent.find((m) => m.chatId === "7" && m.text.startsWith("Waiting for the owner")),
      "Bob told",
    );
    expect(telegram.sent.some((m) => m.chatId === "7" && m.keyboard)).toBe(false);
    const bobsTap = telegram.tap(prompt, "Allow once", user(7, "Bob"));
    await until(() => telegram.answers.get(bobsTap)?.text === "This is not yours to decide.", "Bob's tap refused");
    const ownersTap = telegram.tap(prompt, "Always allow", user(42, "Ada"));
    await until(() => telegram.answers.get(ownersTap)?.text === "Always allowed here.", "the owner's tap");
    await until(() => telegram.sent.find((m) => m.chatId === "7" && m.text === "done: hi"), "Bob's command ran");
    // Always allowed for Bob's chat: asked no more there, while the owner's own calls never were.
    const prompts = () => telegram.sent.filter((m) => m.keyboard).length;
    const before = prompts();
    telegram.pushUpdate(message(privateChat(7), user(7, "Bob"), { text: "say hi again" }));
    await until(() => telegram.sent.filter((m) => m.chatId === "7" && m.text === "done: hi").length === 2, "again");
    telegramSays("say hi");
    await until(() => telegram.sent.find((m) => m.chatId === "42" && m.text === "done: hi"), "the owner's ran");
    expect(prompts()).toBe(before);
  }, 90_000);

  it("links accounts only by their owner's one-time code; /whoami tells who and what is stored; /unlink separates", async () => {
    const started = await start();
    model.respond(() => ({ content: "ok" }));
    telegramSays("hello");
    await toTelegram("ok");
    // Ada wrote from Discord before linking: that account's person (its model call) joins her with it.
    discord.dispatchMessage({ channelId: DM, author: ADA, content: "hi" });
    await toDiscord(DM, "ok");
    // Never in a group: whoever there sent the code first would become Ada.
    telegram.pushUpdate(message(groupChat(-100), user(42, "Ada"), { text: "/link@pincer_test_bot" }));
    await toTelegram("Ask for a code in a private chat");
    telegramSays("/link");
    const offer = await toTelegram("Your code:");
    const code = /Your code: ([A-Z0-9]{6,12}) /.exec(offer.text)?.[1] as string;
    expect(code).toBeDefined();

    // Mallory guesses: refused, saying nothing of anyone's codes.
    discord.dispatchMessage({ channelId: MALLORY_DM, author: MALLORY, content: "/link AAAAAAAAAA" });
    expect((await toDiscord(MALLORY_DM, "That code is not valid")).content).not.toContain("Ada");
    // Ada's own Discord account joins her with it; the same code again (Mallory replaying it) joins nobody.
    discord.dispatchMessage({ channelId: DM, author: ADA, content: `/link ${code}` });
    await toDiscord(DM, "Linked: this account is now part of Ada");
    const before = discord.sent.length;
    discord.dispatchMessage({ channelId: MALLORY_DM, author: MALLORY, content: `/link ${code}` });
    await toDiscord(MALLORY_DM, "That code is not valid", before);

    // On Discord, Ada is the owner now (the person's Telegram account is named in TELEGRAM_ALLOW_FROM), with exec.
    discord.dispatchMessage({ channelId: DM, author: ADA, content: "/whoami" });
    const whoami = (await toDiscord(DM, "You are Ada")).content;
    expect(whoami).toContain("role owner");
    expect(whoami).toContain(`telegram 42 (Ada)`);
    expect(whoami).toContain(`discord ${ADA.id}`);
    expect(whoami).toMatch(/Stored about you: 2 model calls in 2 chats, 0 jobs/);
    expect(await started.store.people.show(`discord:${ADA.id}`)).toBeUndefined();
    model.requests.length = 0;
    const asked = discord.sent.length;
    discord.dispatchMessage({ channelId: DM, author: ADA, content: "what can you do?" });
    await toDiscord(DM, "ok", asked);
    expect(toolsOf(model.requests[0])).toContain("exec");

    // The owner's Telegram account sending a guest's code is refused: nobody gains the owner's rights that way.
    discord.dispatchMessage({ channelId: MALLORY_DM, author: MALLORY, content: "/link" });
    const mallorys = /Your code: ([A-Z0-9]+)/.exec((await toDiscord(MALLORY_DM, "Your code:")).content)?.[1];
    telegramSays(`/link ${mallorys}`);
    await toTelegram("This account is an owner's");

    // The CLI sees the same people.
    const list = await cli(["people", "list"]);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/telegram:42 {2}Ada {2}owner {2}2 account\(s\)/);
    expect(list.stdout).toMatch(new RegExp(`discord:${MALLORY.id} {2}mallory {2}guest {2}1 account`));
    const shown = await cli(["people", "show", "telegram:42"]);
    expect(shown.stdout).toContain(`account discord ${ADA.id} (ada)`);
    const listed = JSON.parse((await cli(["people", "list", "--json"])).stdout) as Array<Record<string, unknown>>;
    expect(listed.map((p) => [p.id, p.role, p.roleSet])).toEqual([
      ["telegram:42", "owner", false],
      [`discord:${MALLORY.id}`, "guest", false],
    ]);
    const ada = JSON.parse((await cli(["people", "show", "telegram:42", "--json"])).stdout);
    expect(ada).toMatchObject({ name: "Ada", agent: "main", stored: { modelCalls: 3, chats: 2, jobs: 0 } });
    expect(ada.identities).toContainEqual({ route: "discord", userId: ADA.id, name: "ada" });
    const nobody = await cli(["people", "show", "nobody", "--json"]);
    expect([nobody.code, nobody.stdout.trim()]).toEqual([1, "null"]);
    expect((await cli(["people", "role", `discord:${MALLORY.id}`, "admin"])).code).toBe(1);
    expect((await cli(["people", "role", `discord:${MALLORY.id}`, "member"])).stdout).toContain("is now member");
    expect((await started.store.people.show(`discord:${MALLORY.id}`))?.role).toBe("member");

    telegramSays("/unlink");
    await toTelegram("Unlinked 1 account(s)");
    const sentBefore = discord.sent.length;
    discord.dispatchMessage({ channelId: DM, author: ADA, content: "/whoami" });
    const alone = (await toDiscord(DM, "You are ada", sentBefore)).content;
    expect(alone).toContain("role guest");
    expect((await cli(["people", "remove", `discord:${MALLORY.id}`])).code).toBe(0);
    expect(await started.store.people.show(`discord:${MALLORY.id}`)).toBeUndefined();
  }, 120_000);
});
