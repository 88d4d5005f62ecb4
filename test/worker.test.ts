import { afterAll, beforeEach, describe, expect, it } from "vitest";
import type { App } from "../src/app.js";
import type { Config } from "../src/config/config.js";
import { recordingChannel, tempHome, testApp, userMessage } from "./helpers/app.js";
import { fakeModelForFile } from "./helpers/model.js";
import { until } from "./helpers/until.js";

const fake = fakeModelForFile();
beforeEach(() => {
  fake.respond(() => ({ content: "ok" }));
});

/** The text of the last user message of a request. */
function lastUserOf(request: { messages: Array<{ role: string; content?: unknown }> }): string {
  return String(request.messages.filter((m) => m.role === "user").at(-1)?.content);
}

/** The last user message text of a model request. */
function lastUser(request: number): string {
  const users = fake.requests[request].messages.filter((m) => m.role === "user");
  return String(users.at(-1)?.content);
}

async function started(home = tempHome(), env: Record<string, string> = {}, adjust?: (config: Config) => void) {
  const app = await testApp(fake.url, home, env, adjust);
  const channel = recordingChannel(app);
  await app.start([channel]);
  return { app, channel, home };
}

describe("agent worker", () => {
  let app: App | undefined;
  afterAll(async () => {
    await app?.stop();
  });

  it("runs one conversation in order and different conversations in parallel", async () => {
    const arrivals: Array<{ text: string; at: number }> = [];
    fake.respond(async (request) => {
      const text = String(request.messages.filter((m) => m.role === "user").at(-1)?.content);
      arrivals.push({ text, at: performance.now() });
      return { content: `re: ${text}`, delayMs: 300 };
    });
    const ctx = await started();
    app = ctx.app;
    await app.bus.publishInbound(userMessage("a", "a1"));
    await app.bus.publishInbound(userMessage("a", "a2"));
    await app.bus.publishInbound(userMessage("a", "a3"));
    await app.bus.publishInbound(userMessage("b", "b1"));
    await ctx.channel.waitFor(4);
    const at = (text: string) => arrivals.find((a) => a.text === text)?.at ?? Number.NaN;
    // b1 reached the model while a1's turn still ran (a2 can only start after it); a2 and a3 each waited.
    expect(at("b1")).toBeLessThan(at("a2"));
    expect(at("a2") - at("a1")).toBeGreaterThanOrEqual(290);
    expect(at("a3") - at("a2")).toBeGreaterThanOrEqual(290);
    const toA = ctx.channel.sent.filter((m) => m.chatId === "a").map((m) => m.text);
    expect(toA).toEqual(["re: a1", "re: a2", "re: a3"]);
    // a2's turn saw a1's exchange in its history.
    const a2Request = fake.requests.find((r) => JSON.stringify(r.messages).includes('"a2"'));
    expect(JSON.stringify(a2Request?.messages)).toContain("re: a1");
    await app.stop();
    app = undefined;
  });

  it("caps turns across conversations", async () => {
    let inFlight = 0;
    let peak = 0;
    fake.respond(async () => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      await new Promise((r) => setTimeout(r, 100));
      inFlight--;
      return { content: "ok" };
    });
    const ctx = await started(tempHome(), {}, (config) => {
      config.agent.maxConcurrentTurns = 2;
    });
    app = ctx.app;
    for (const chat of ["c1", "c2", "c3", "c4", "c5"]) await app.bus.publishInbound(userMessage(chat, "hi"));
    await ctx.channel.waitFor(5);
    expect(peak).toBe(2);
    await app.stop();
    app = undefined;
  });

  it("turns a 4xx from the model into a notice at once, without a fallback, and stays usable", async () => {
    const ctx = await started(tempHome(), {}, (config) => {
      config.agent.fallbackModels = ["backup-model"];
    });
    app = ctx.app;
    fake.enqueue({ status: 400 });
    await app.bus.publishInbound(userMessage("x", "first"));
    await ctx.channel.waitFor(1);
    expect(ctx.channel.sent[0]).toMatchObject({ kind: "notice", chatId: "x" });
    expect(ctx.channel.sent[0].text).toMatch(/^Sorry, the model endpoint answered 400/);
    expect(fake.requests.map((r) => r.model)).toEqual(["gpt-4.1-mini"]);
    fake.enqueue({ content: "back again" });
    await app.bus.publishInbound(userMessage("x", "second"));
    await ctx.channel.waitFor(2);
    expect(ctx.channel.sent[1]).toMatchObject({ kind: "reply", text: "back again" });
    expect(JSON.stringify(fake.requests.at(-1)?.messages)).toContain("first");
    await app.stop();
    app = undefined;
  });

  it("answers from agent.fallbackModels while the main model returns 5xx", async () => {
    fake.respond((request) =>
      request.model === "backup-model" ? { content: `backup: ${lastUserOf(request)}` } : { status: 503 },
    );
    const ctx = await started(tempHome(), {}, (config) => {
      config.agent.fallbackModels = ["backup-model"];
      config.agent.circuitBreaker = { failureThreshold: 2, coolDownSeconds: 60 };
    });
    app = ctx.app;
    for (const text of ["one", "two", "three"]) await app.bus.publishInbound(userMessage("f", text));
    await ctx.channel.waitFor(3);
    expect(ctx.channel.sent.map((m) => m.text)).toEqual(["backup: one", "backup: two", "backup: three"]);
    // The main model's circuit opened after two failures: the third message went straight to the backup.
    expect(fake.requests.map((r) => r.model)).toEqual([
      "gpt-4.1-mini",
      "backup-model",
      "gpt-4.1-mini",
      "backup-model",
      "backup-model",
    ]);
    await app.stop();
    app = undefined;
  });

  it("model down then up: messages wait in their queues, each chat is told once, every answer comes once, in order", async () => {
    let up = false;
    fake.respond((request) => (up ? { content: `re: ${lastUserOf(request)}` } : { status: 502 }));
    const ctx = await started(tempHome(), {}, (config) => {
      config.agent.circuitBreaker = { failureThreshold: 2, coolDownSeconds: 0.3 };
    });
    app = ctx.app;
    await app.bus.publishInbound(userMessage("a", "a1"));
    await app.bus.publishInbound(userMessage("b", "b1"));
    await ctx.channel.waitFor(2);
    // A new message arrives while its chat waits for the model: it queues behind the older one.
    await app.bus.publishInbound(userMessage("a", "a2"));
    await until(() => fake.requests.length >= 6, "six model calls during the outage");
    const duringOutage = fake.requests.length;
    up = true;
    await ctx.channel.waitFor(5);
    // Nothing is left to run or send, so nothing more can arrive.
    await until(
      async () =>
        (await app!.store.journal.pendingInbound()).length === 0 &&
        (await app!.store.journal.pendingOutbound("console")).length === 0,
      "nothing left to run or send",
    );
    const to = (chat: string) => ctx.channel.sent.filter((m) => m.chatId === chat).map((m) => m.text);
    expect(to("a")).toEqual([
      expect.stringMatching(/^The model is not answering right now \(.*502/),
      "re: a1",
      "re: a2",
    ]);
    expect(to("b")).toEqual([expect.stringMatching(/^The model is not answering right now/), "re: b1"]);
    expect(ctx.channel.sent).toHaveLength(5);
    // While the circuit was open the endpoint was asked about once per cool-down, not once per message.
    expect(duringOutage).toBeLessThan(12);
    await app.stop();
    app = undefined;
  });

  it("answers /help and /status itself, /new starts over, /stop cancels a running turn", async () => {
    // Counting model calls here: consolidating the conversation /new ends would be one more (test/memory.test.ts).
    const ctx = await started(undefined, {}, (config) => {
      config.memory.consolidate = false;
    });
    app = ctx.app;
    await app.bus.publishInbound(userMessage("c", "remember 42"));
    await ctx.channel.waitFor(1);
    await app.bus.publishInbound(userMessage("c", "/help"));
    await ctx.channel.waitFor(2);
    expect(ctx.channel.sent[1].text).toContain("/new");
    await app.bus.publishInbound(userMessage("c", "/status"));
    await ctx.channel.waitFor(3);
    expect(ctx.channel.sent[2].text).toMatch(/Conversation: console:c, 2 stored messages/);
    await app.bus.publishInbound(userMessage("c", "/new"));
    await ctx.channel.waitFor(4);
    expect(ctx.channel.sent[3].text).toMatch(/new conversation/);

    fake.enqueue({ content: "too late", delayMs: 5000 });
    const asked = fake.requests.length;
    await app.bus.publishInbound(userMessage("c", "slow question"));
    await until(() => fake.requests.length > asked, "the slow question's model call");
    await app.bus.publishInbound(userMessage("c", "/stop"));
    await ctx.channel.waitFor(6);
    expect(ctx.channel.sent.slice(4).map((m) => m.text)).toEqual(["Stopping the running turn.", "Stopped."]);
    await app.bus.publishInbound(userMessage("c", "after"));
    await ctx.channel.waitFor(7);
    // Only the model calls for real messages happened: /help, /status, /new and /stop never reached it.
    expect(fake.requests.map((_, i) => lastUser(i))).toEqual(["remember 42", "slow question", "after"]);
    // After /new the earlier exchange is gone from the context; the stopped question stays.
    const context = JSON.stringify(fake.requests.at(-1)?.messages);
    expect(context).not.toContain("remember 42");
    expect(context).toContain("slow question");
    await app.stop();
    app = undefined;
  });
});

describe("a conversation that moved to another process (clustered mode)", () => {
  it("is dropped here: its running turn ends without writing, its queued messages stay pending", async () => {
    const seen: string[] = [];
    fake.respond(async (request) => {
      seen.push(lastUserOf(request));
      return { content: `re: ${lastUserOf(request)}`, delayMs: 1500 };
    });
    const { app, channel } = await started();
    try {
      const first = userMessage("moved", "m1");
      const second = userMessage("moved", "m2");
      await app.bus.publishInbound(first);
      await app.bus.publishInbound(second);
      await until(() => seen.includes("m1"), "the first turn to ask the model");
      app.worker.lanes.drop(first.sessionKey);
      await until(() => app.worker.lanes.runningSessions.length === 0, "the turn to end");
      // Another chat's turn asks the model later, and its answer comes after the same delay: once it is sent, the
      // dropped turn's answer has had its time to arrive.
      await app.bus.publishInbound(userMessage("control", "c1"));
      await channel.waitFor(1);
      // Nothing was answered or stored: both messages wait in the inbox for the new holder.
      expect(channel.sent.map((m) => m.chatId)).toEqual(["control"]);
      expect(seen).toEqual(["m1", "c1"]);
      expect(await app.store.journal.isPending(first)).toBe(true);
      expect(await app.store.journal.isPending(second)).toBe(true);
      expect(await app.store.conversations.count(first.sessionKey)).toBe(0);
    } finally {
      await app.stop();
    }
  });
});

describe("restarts", () => {
  it("keeps history across a restart of the store", async () => {
    const home = tempHome();
    const first = await started(home);
    await first.app.bus.publishInbound(userMessage("r", "my name is Ada"));
    await first.channel.waitFor(1);
    await first.app.stop();

    const second = await started(home);
    await second.app.bus.publishInbound(userMessage("r", "what is my name?"));
    await second.channel.waitFor(1);
    await second.app.stop();
    const context = JSON.stringify(fake.requests.at(-1)?.messages);
    expect(context).toContain("my name is Ada");
    expect(context).toContain("what is my name?");
  });

  it("re-runs a message whose turn was cut short, and drops a replayed one", async () => {
    const home = tempHome();
    const first = await started(home);
    fake.enqueue({ content: "never sent", delayMs: 3000 });
    const msg = userMessage("q", "cut short");
    const asked = fake.requests.length;
    await first.app.bus.publishInbound(msg);
    await until(() => fake.requests.length > asked, "the model call");
    await first.app.stop();
    expect(first.channel.sent).toEqual([]);

    const second = await started(home);
    expect(await second.app.bus.publishInbound(msg)).toBe(false);
    await second.channel.waitFor(1);
    // Nothing left to run or send: no second answer can come.
    await until(async () => (await second.app.store.journal.pendingInbound()).length === 0, "nothing left to run");
    await until(
      async () => (await second.app.store.journal.pendingOutbound("console")).length === 0,
      "nothing left to send",
    );
    await second.app.stop();
    expect(second.channel.sent.map((m) => m.text)).toEqual(["ok"]);
  });

  it("runs a message from before a restart before a newer one that arrives while the channels start", async () => {
    const home = tempHome();
    const first = await started(home);
    fake.enqueue({ content: "never sent", delayMs: 3000 });
    await first.app.bus.publishInbound(userMessage("o", "older"));
    await until(() => fake.requests.length === 1, "the older message's model call");
    await first.app.stop();

    fake.requests.length = 0;
    fake.respond((request) => ({
      content: `re: ${String(request.messages.filter((m) => m.role === "user").at(-1)?.content)}`,
    }));
    const app2 = await testApp(fake.url, home);
    const channel = recordingChannel(app2);
    // A channel that receives a message the moment it connects (a platform with updates queued).
    await app2.start([
      {
        ...channel,
        async start() {
          await channel.start();
          await app2.bus.publishInbound(userMessage("o", "newer"));
        },
      },
    ]);
    await channel.waitFor(2);
    await app2.stop();
    expect(channel.sent.map((m) => m.text)).toEqual(["re: older", "re: newer"]);
    expect(JSON.stringify(fake.requests[1].messages)).toContain("re: older");
  });

  it("sends a reply recorded before a crash when the channel comes back, once", async () => {
    const home = tempHome();
    const first = await testApp(fake.url, home);
    await first.store.journal.recordOutbound({ channel: "console", chatId: "z", text: "from before", kind: "reply" });
    await first.stop();
    const second = await started(home);
    await second.channel.waitFor(1);
    await second.app.stop();
    const third = await started(home);
    // The sender has looked at the outbox and found nothing to send.
    await third.app.bus.outboundIdle("console");
    await third.app.stop();
    expect(second.channel.sent.map((m) => m.text)).toEqual(["from before"]);
    expect(third.channel.sent).toEqual([]);
  });

  it("closes unrun a message from before a restart whose sender lost access while pincer was down", async () => {
    const home = tempHome();
    const first = await testApp(fake.url, home, { TELEGRAM_ALLOW_FROM: "42,7" });
    const from = (senderId: string) => ({
      ...userMessage(senderId, `hello from ${senderId}`),
      channel: "telegram" as const,
      senderId,
      sessionKey: `telegram:${senderId}`,
    });
    for (const id of ["42", "7"]) await first.store.journal.acceptInbound(from(id));
    await first.stop();
    const second = await testApp(fake.url, home, { TELEGRAM_ALLOW_FROM: "7" });
    const sent: string[] = [];
    const telegram = {
      name: "telegram" as const,
      start: () => second.bus.subscribeOutbound("telegram", async (m) => void sent.push(`${m.chatId}: ${m.text}`)),
      stop: () => second.bus.unsubscribeOutbound("telegram"),
    };
    await second.start([telegram]);
    await until(async () => (await second.store.journal.pendingInbound()).length === 0, "both messages closed");
    await until(() => sent.length === 1, "the answer to 7");
    await second.stop();
    expect(sent).toEqual(["7: ok"]);
    expect(fake.requests.map(lastUserOf).join()).not.toContain("hello from 42");
  });
});
