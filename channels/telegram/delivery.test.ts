import { createServer } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config/config.js";
import { message, privateChat, startTelegramHarness, type TelegramHarness, user } from "../../test/helpers/telegram.js";

let h: TelegramHarness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
});

const ask = (harness: TelegramHarness, text: string) =>
  harness.telegram.pushUpdate(message(privateChat(42), user(42), { text }));

describe("telegram channel: rendering long and difficult replies", () => {
  it("splits a long reply under 4096 characters, reopening the code block across the cut", async () => {
    h = await startTelegramHarness();
    const code = Array.from({ length: 150 }, (_, i) => `    print("line ${i}: ${"x".repeat(20)}")`).join("\n");
    const prose = Array.from({ length: 6 }, (_, i) => `Paragraph ${i}: ${"lorem ipsum ".repeat(60)}`).join("\n\n");
    h.model.enqueue({ content: `${prose}\n\n\`\`\`python\n${code}\n\`\`\`\n\nThat is all.` });
    const update = ask(h, "write a lot");
    await h.telegram.waitFor(() => h?.telegram.sent.find((m) => m.text.endsWith("That is all.")));

    const sent = h.telegram.sent;
    expect(sent.length).toBeGreaterThanOrEqual(3);
    for (const m of sent) {
      expect(m.text.length).toBeLessThanOrEqual(4096);
      expect(m.parseMode).toBe("HTML");
    }
    expect(sent[0].replyToId).toBe(update.message?.message_id);
    expect(sent.slice(1).every((m) => m.replyToId === undefined)).toBe(true);
    const htmlParts = h.telegram.callsTo("sendMessage").map((c) => String(c.params.text));
    const codeParts = htmlParts.filter((t) => t.includes("line 1"));
    const continued = htmlParts.filter((t) => t.startsWith('<pre><code class="language-python">    print("line'));
    expect(continued.length).toBeGreaterThanOrEqual(1);
    expect(codeParts.length + continued.length).toBeGreaterThanOrEqual(2);
    const allText = sent.map((m) => m.text).join("\n");
    for (let i = 0; i < 150; i++) expect(allText).toContain(`print("line ${i}: `);
  });

  it("resends the same text plain when Telegram cannot parse the HTML", async () => {
    h = await startTelegramHarness();
    h.model.enqueue({ content: "Use **bold** and <tags>" });
    h.telegram.failNext("sendMessage", {
      status: 400,
      description: 'Bad Request: can\'t parse entities: Unsupported start tag "tags" at byte offset 22',
    });
    ask(h, "format please");
    const sent = await h.telegram.waitFor(() => h?.telegram.sent[0]);
    expect(sent).toMatchObject({ text: "Use bold and <tags>", parseMode: undefined });
    const calls = h.telegram.callsTo("sendMessage");
    expect(calls).toHaveLength(2);
    expect(calls[0].params.parse_mode).toBe("HTML");
    expect(calls[1].params.parse_mode).toBeUndefined();
    await h.telegram.waitFor(async () => (await h!.app.store.journal.pendingOutbound("telegram")).length === 0);
  });
});

describe("telegram channel: flood control and faults", () => {
  it("waits out a 429 retry_after and delivers", async () => {
    h = await startTelegramHarness();
    h.model.enqueue({ content: "after the flood" });
    h.telegram.failNext("sendMessage", { status: 429, retryAfter: 1 });
    ask(h, "hi");
    const sent = await h.telegram.waitFor(() => h?.telegram.sent[0]);
    expect(sent.text).toBe("after the flood");
    const calls = h.telegram.callsTo("sendMessage");
    expect(calls).toHaveLength(2);
    expect(calls[0].status).toBe(429);
    expect(calls[1].at - calls[0].at).toBeGreaterThanOrEqual(950);
  });

  it("retries 5xx answers and delivers", async () => {
    h = await startTelegramHarness();
    h.model.enqueue({ content: "made it" });
    h.telegram.failNext("sendMessage", { status: 502 }, 2);
    ask(h, "hi");
    const sent = await h.telegram.waitFor(() => h?.telegram.sent[0]);
    expect(sent.text).toBe("made it");
    expect(h.telegram.callsTo("sendMessage").map((c) => c.status)).toEqual([502, 502, 200]);
  });

  it("retries a reply Telegram would not take outside the turn, without a restart", async () => {
    h = await startTelegramHarness();
    h.model.enqueue({ content: "not lost" });
    h.telegram.failNext("sendMessage", { status: 500 }, 6);
    ask(h, "hi");
    const sent = await h.telegram.waitFor(() => h?.telegram.sent[0]);
    expect(sent).toMatchObject({ chatId: "42", text: "not lost" });
    expect(h.telegram.callsTo("sendMessage").map((c) => c.status)).toEqual([500, 500, 500, 500, 500, 500, 200]);
    await h.telegram.waitFor(async () => (await h!.app.store.journal.pendingOutbound("telegram")).length === 0);
    expect(h.model.requests).toHaveLength(1);
    expect(h.logs.filter((l) => l.msg.startsWith("could not send; retrying"))).toHaveLength(1);
    expect(h.logs.filter((l) => l.msg === "sending works again")).toHaveLength(1);
  });

  it("sends only the missing parts of a long reply after a failure after part 2, honouring retry_after", async () => {
    h = await startTelegramHarness();
    const paragraphs = Array.from({ length: 5 }, (_, i) => `Part ${i + 1}: ${"lorem ipsum ".repeat(300)}`);
    h.model.enqueue({ content: paragraphs.join("\n\n") });
    ask(h, "long please");
    await h.telegram.waitFor(() => h?.telegram.sent.length === 2);
    // Telegram floods out the third part (waits 1 s), then fails it twice more.
    h.telegram.failNext("sendMessage", { status: 429, retryAfter: 1 });
    h.telegram.failNext("sendMessage", { status: 502 }, 2);
    await h.telegram.waitFor(() => h?.telegram.sent.length === 5, 10_000);
    const texts = h.telegram.sent.map((m) => m.text.slice(0, 7));
    expect(texts).toEqual(["Part 1:", "Part 2:", "Part 3:", "Part 4:", "Part 5:"]);
    const calls = h.telegram.callsTo("sendMessage");
    expect(calls.map((c) => c.status)).toEqual([200, 200, 429, 502, 502, 200, 200, 200]);
    expect(calls[3].at - calls[2].at).toBeGreaterThanOrEqual(950);
    expect(h.telegram.sent[0].replyToId).toBeDefined();
    expect(h.telegram.sent.slice(1).every((m) => m.replyToId === undefined)).toBe(true);
  });

  it("dead-letters a reply after the configured time and at once when the chat is gone; status counts them", async () => {
    h = await startTelegramHarness({
      adjust: (config) => {
        config.delivery.deadLetterAfterHours = 0.8 / 3600;
      },
    });
    h.model.respond((req) => ({ content: `re: ${String(req.messages.at(-1)?.content).split("\n").at(-1)}` }));
    h.telegram.failNext("sendMessage", { status: 502 }, 100_000);
    ask(h, "first");
    await h.telegram.waitFor(() => h?.logs.find((l) => l.msg.startsWith("gave up on a message")));
    h.telegram.clearFailures();
    h.telegram.failNext("sendMessage", { status: 400, description: "Bad Request: chat not found" });
    ask(h, "second");
    await h.telegram.waitFor(() => h?.logs.find((l) => l.msg.startsWith("the platform refused a message")));
    ask(h, "third");
    await h.telegram.waitFor(() => h?.telegram.sent[0]);
    expect(h.telegram.sent.map((m) => m.text)).toEqual(["re: third"]);
    expect(h.logs.filter((l) => l.msg.includes("dead letters"))).toHaveLength(2);
    await h.telegram.waitFor(async () => (await h!.app.store.journal.pendingOutbound("telegram")).length === 0);
    expect(await h.app.store.status.summary()).toMatchObject({ deadLetters: 2, pendingOutbound: 0 });
  });

  it("rides out a polling outage, logging it once when it starts and once when it ends", async () => {
    h = await startTelegramHarness();
    await h.telegram.waitFor(() => h?.telegram.callsTo("getUpdates").length);
    h.telegram.failNext("getUpdates", { status: 502 }, 3);
    h.telegram.failNext("getUpdates", { status: 429, retryAfter: 0 });
    // The held poll returns this update; the polls after it fail four times in a row.
    ask(h, "first");
    await h.telegram.waitFor(() => h?.telegram.sent[0]);
    await h.telegram.waitFor(() => h?.telegram.callsTo("getUpdates").some((c) => c.status === 429));
    h.model.enqueue({ content: "back again" });
    ask(h, "are you there?");
    const sent = await h.telegram.waitFor(() => h?.telegram.sent[1]);
    expect(sent.text).toBe("back again");
    await h.telegram.waitFor(() => h?.logs.find((l) => l.msg === "telegram polling recovered"));
    const statuses = h.telegram.callsTo("getUpdates").map((c) => c.status);
    expect(statuses.filter((s) => s === 502)).toHaveLength(3);
    expect(statuses).toContain(429);
    expect(h.logs.filter((l) => l.msg.startsWith("telegram polling failed"))).toMatchObject([{ level: 40 }]);
    expect(h.logs.filter((l) => l.msg === "telegram polling recovered")).toHaveLength(1);
  });

  it("logs a token refused while polling as an error, not an outage to ride out", async () => {
    h = await startTelegramHarness();
    await h.telegram.waitFor(() => h?.telegram.callsTo("getUpdates").length);
    h.telegram.failNext("getUpdates", { status: 401 }, 2);
    ask(h, "wake the held poll");
    await h.telegram.waitFor(() => h?.logs.find((l) => l.msg === "telegram polling recovered"));
    expect(h.logs.filter((l) => l.msg.startsWith("telegram polling failed"))).toMatchObject([{ level: 50 }]);
  });

  it("starts while Telegram is unreachable and connects once it is back, logging the outage once", async () => {
    h = await startTelegramHarness({ beforeStart: (telegram) => telegram.failNext("getMe", { status: 502 }, 9) });
    h.model.enqueue({ content: "finally" });
    ask(h, "hello?");
    const sent = await h.telegram.waitFor(() => h?.telegram.sent[0]);
    expect(sent.text).toBe("finally");
    expect(h.telegram.callsTo("getMe").map((c) => c.status)).toEqual([...Array(9).fill(502), 200]);
    // An error, not a warning (unlike a polling outage): the bot is not connected at all.
    expect(h.logs.filter((l) => l.msg === "connecting to Telegram failed; retrying with backoff")).toMatchObject([
      { level: 50 },
    ]);
    expect(h.logs.filter((l) => l.msg === "connecting to Telegram: working again")).toHaveLength(1);
  });

  it("stops at once while Telegram is away, without waiting out the retry pauses", async () => {
    const harness = await startTelegramHarness({
      timing: { retry: { attempts: 5, baseDelayMs: 60_000, maxDelayMs: 60_000, maxRetryAfterSeconds: 5 } },
      beforeStart: (telegram) => telegram.failNext("getMe", { status: 502 }, 1000),
    });
    // start() gives up on its own getMe only after minutes of pauses, so it is not awaited here.
    await harness.telegram.waitFor(() => harness.telegram.callsTo("getMe").length >= 1);
    await harness.close();
    expect(harness.telegram.sent).toEqual([]);
  });

  it("refuses to start with a token Telegram rejects (401 or 404), naming the variable, and never polls", async () => {
    h = await startTelegramHarness();
    for (const [status, description] of [
      [401, "Unauthorized"],
      [404, "Not Found"],
    ] as const) {
      h.telegram.failNext("getMe", { status, description });
      const polls = h.telegram.callsTo("getUpdates").length;
      await expect(h.restartChannel()).rejects.toThrow(
        `Telegram rejected TELEGRAM_BOT_TOKEN (${status} ${description}): check the token BotFather gave you.`,
      );
      expect(h.telegram.callsTo("getUpdates").length).toBeLessThanOrEqual(polls + 1);
    }
  });

  it("drops a replayed update instead of answering twice", async () => {
    h = await startTelegramHarness();
    h.model.enqueue({ content: "once" });
    const update = ask(h, "hi");
    await h.telegram.waitFor(() => h?.telegram.sent[0]);
    // Telegram re-sends an update it believes was not received (same chat, same message id).
    h.telegram.pushUpdate({ message: update.message });
    h.model.enqueue({ content: "second" });
    ask(h, "next");
    await h.telegram.waitFor(() => h?.telegram.sent[1]);
    expect(h.telegram.sent.map((m) => m.text)).toEqual(["once", "second"]);
  });
});

async function freePort(): Promise<number> {
  const server = createServer().listen(0, "127.0.0.1");
  await new Promise((r) => server.once("listening", r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

describe("telegram channel: webhook mode", () => {
  it("registers the webhook with its secret, answers updates posted to it, and refuses a wrong secret", async () => {
    const port = await freePort();
    h = await startTelegramHarness({
      env: {
        TELEGRAM_WEBHOOK_URL: `http://127.0.0.1:${port}/telegram-hook`,
        TELEGRAM_WEBHOOK_SECRET: "s3cret_-token",
        TELEGRAM_WEBHOOK_PORT: String(port),
      },
    });
    const setWebhook = await h.telegram.waitFor(() => h?.telegram.callsTo("setWebhook")[0]);
    expect(setWebhook.params).toMatchObject({
      url: `http://127.0.0.1:${port}/telegram-hook`,
      secret_token: "s3cret_-token",
    });
    expect(h.telegram.callsTo("getUpdates")).toEqual([]);

    h.model.enqueue({ content: "via webhook" });
    expect(await h.telegram.deliverWebhook(message(privateChat(42), user(42), { text: "hook?" }))).toBe(200);
    const sent = await h.telegram.waitFor(() => h?.telegram.sent[0]);
    expect(sent.text).toBe("via webhook");

    const forged = await fetch(`http://127.0.0.1:${port}/telegram-hook`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": "wrong" },
      body: JSON.stringify(message(privateChat(42), user(42), { text: "forged", message_id: 999 } as never)),
    });
    expect(forged.status).toBe(401);
    expect(h.model.requests).toHaveLength(1);
  });

  it("reads the webhook settings from the environment and rejects a malformed secret", async () => {
    const base = { OPENAI_API_KEY: "k", PINCER_HOME: "/tmp/pincer-config-test", PINCER_CONFIG: "" };
    const config = loadConfig({
      ...base,
      TELEGRAM_WEBHOOK_URL: "https://bot.example.org/tg",
      TELEGRAM_WEBHOOK_SECRET: "abc_DEF-1",
      TELEGRAM_WEBHOOK_PORT: "9000",
    });
    expect(config.telegram).toMatchObject({
      webhookUrl: "https://bot.example.org/tg",
      webhookSecret: "abc_DEF-1",
      webhookPort: 9000,
    });
    expect(() => loadConfig({ ...base, TELEGRAM_WEBHOOK_SECRET: "has spaces" })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, TELEGRAM_WEBHOOK_PORT: "99999" })).toThrow(/TELEGRAM_WEBHOOK_PORT/);
    expect(() => loadConfig({ ...base, TELEGRAM_WEBHOOK_URL: "ftp://x" })).toThrow(/TELEGRAM_WEBHOOK_URL/);
  });
});
