import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import type { App } from "../src/app.js";
import type { Config } from "../src/config/config.js";
import type { ChatRequest } from "./fakes/openai-server.js";
import { startedRecording, tempHome, userMessage } from "./helpers/app.js";
import { chatOf, fakeModelForFile } from "./helpers/model.js";
import { until } from "./helpers/until.js";

/**
 * Bounded waiting, through the real openai client against the fake endpoint: a request the
 * endpoint refuses never wedges its chat or the breaker, a waiting message gives way to /stop
 * and /new, the bounds hold across a restart, and trickling answers cannot hold the turn slots.
 */
const fake = fakeModelForFile();
const lastUser = (request: ChatRequest) => String(request.messages.filter((m) => m.role === "user").at(-1)?.content);
const asked = (text: string) => fake.requests.filter((r) => lastUser(r) === text).length;

let apps: App[] = [];
afterEach(async () => {
  await Promise.all(apps.map((app) => app.stop()));
  apps = [];
});

const started = (home = tempHome(), adjust?: (config: Config) => void) =>
  startedRecording(fake.url, apps, home, adjust);

describe("a request the endpoint refuses", () => {
  it("is answered at once with its reason, asked once, and neither wedges its chat nor opens the breaker", async () => {
    fake.respond((request) =>
      lastUser(request) === "poison"
        ? { status: 500, message: 'Unexpected empty grammar stack after accepting piece: {"path": "notes.txt",' }
        : { content: `re: ${lastUser(request)}` },
    );
    const ctx = await started(tempHome(), (config) => {
      config.agent.modelRetries = 2;
      config.agent.circuitBreaker = { failureThreshold: 1, coolDownSeconds: 60 };
    });
    for (const text of ["poison", "poison", "after"]) await ctx.app.bus.publishInbound(userMessage("w", text));
    await ctx.app.bus.publishInbound(userMessage("o", "other"));
    await ctx.settled();
    const refused = "Sorry, the model endpoint failed while the model was writing a tool call (500).";
    expect(ctx.to("w")).toEqual([refused, refused, "re: after"]);
    expect(ctx.to("o")).toEqual(["re: other"]);
    expect(asked("poison")).toBe(2);
  });

  it("tells the endpoint's sentence for a model server started without --jinja, once per message", async () => {
    fake.respond(() => ({ status: 500, message: "tools param requires --jinja flag" }));
    const ctx = await started();
    await ctx.app.bus.publishInbound(userMessage("j", "hello"));
    await ctx.settled();
    expect(ctx.to("j")).toEqual([
      "Sorry, the model endpoint refuses requests with tools (500); llama-server needs --jinja and a chat template with tool support.",
    ]);
    expect(fake.requests).toHaveLength(1);
  });

  it("is given up after agent.waitForModel's tries when it keeps failing the same way, with one notice", async () => {
    fake.respond((request) =>
      lastUser(request) === "odd"
        ? { status: 500, message: "Internal Server Error" }
        : { content: `re: ${lastUser(request)}` },
    );
    const ctx = await started(tempHome(), (config) => {
      config.agent.waitForModel = { refusedSeconds: 60, refusedTries: 3, outageHours: 24 };
    });
    await ctx.app.bus.publishInbound(userMessage("s", "odd"));
    await ctx.app.bus.publishInbound(userMessage("s", "next"));
    await ctx.settled();
    expect(ctx.to("s")).toEqual([
      "Sorry, I could not get an answer to your message: the model endpoint answered 500: Internal Server Error. I have set it aside; send it again rephrased, or /new to start over.",
      "re: next",
    ]);
    expect(asked("odd")).toBe(3);
  });

  it("is given up after refusedSeconds when the endpoint answers 503 to it while it answers other chats", async () => {
    fake.respond((request) =>
      lastUser(request) === "big" ? { status: 503, message: "busy" } : { content: `re: ${lastUser(request)}` },
    );
    const ctx = await started(tempHome(), (config) => {
      // A second between tries: the other chat is answered before the second one.
      config.agent.circuitBreaker = { failureThreshold: 100, coolDownSeconds: 1 };
      config.agent.waitForModel = { refusedSeconds: 3, refusedTries: 100, outageHours: 24 };
    });
    await ctx.app.bus.publishInbound(userMessage("t", "big"));
    await ctx.app.bus.publishInbound(userMessage("t", "queued behind"));
    // Another chat is answered after the first try began: the endpoint is there, not away.
    await ctx.app.bus.publishInbound(userMessage("u", "meanwhile"));
    await ctx.settled();
    expect(ctx.to("u")).toEqual(["re: meanwhile"]);
    expect(ctx.to("t")).toEqual([
      expect.stringMatching(
        /^Sorry, I could not get an answer to your message: the model endpoint answered 503: busy\. /,
      ),
      "re: queued behind",
    ]);
    expect(asked("big")).toBeGreaterThan(1);
    expect(ctx.channel.sent.filter((m) => m.text.startsWith("The model is not answering"))).toEqual([]);
  });

  it("is given up, not waited on for hours, when the model does not finish in time, even with no other chat", async () => {
    // A long answer on a slow machine looks just like this.
    fake.respond((request) =>
      lastUser(request) === "slow" ? { content: "never", delayMs: 5000 } : { content: `re: ${lastUser(request)}` },
    );
    const ctx = await started(tempHome(), (config) => {
      config.agent.modelTimeoutSeconds = 1;
      config.agent.waitForModel = { refusedSeconds: 2, refusedTries: 100, outageHours: 24 };
    });
    await ctx.app.bus.publishInbound(userMessage("t", "slow"));
    await ctx.app.bus.publishInbound(userMessage("t", "queued behind"));
    await ctx.settled();
    expect(ctx.to("t")).toEqual([
      expect.stringMatching(
        /^Sorry, I could not get an answer to your message: the model did not answer within 1 s\. /,
      ),
      "re: queued behind",
    ]);
    // The outage notice ("I will answer as soon as it is back") was never sent.
    expect(ctx.channel.sent.filter((m) => m.text.startsWith("The model is not answering"))).toEqual([]);
  });
});

describe("a message that waits through an outage", () => {
  it("gives way to /stop, is shown in /status, and is never answered later", async () => {
    let up = false;
    fake.respond((request) => (up ? { content: `re: ${lastUser(request)}` } : { status: 502 }));
    const ctx = await started();
    await ctx.app.bus.publishInbound(userMessage("p", "question"));
    await ctx.channel.waitFor(1);
    expect(ctx.to("p")[0]).toMatch(/^The model is not answering right now \(the model endpoint answered 502: fake/);
    await ctx.app.bus.publishInbound(userMessage("p", "/status"));
    await ctx.channel.waitFor(2);
    expect(ctx.to("p")[1]).toContain("This chat: waiting for the model, 1 waiting");
    await ctx.app.bus.publishInbound(userMessage("p", "/stop"));
    await ctx.channel.waitFor(3);
    expect(ctx.to("p")[2]).toBe("Stopped: the message that waited for the model is set aside.");
    up = true;
    await ctx.app.bus.publishInbound(userMessage("p", "next"));
    await ctx.settled();
    expect(ctx.to("p").slice(3)).toEqual(["re: next"]);
    expect(asked("question")).toBeGreaterThan(0);
    expect(JSON.stringify(fake.requests.at(-1)?.messages)).not.toContain("question");
  });

  it("gives way to /new at once: the waiting messages are set aside with one notice", async () => {
    let up = false;
    fake.respond((request) => (up ? { content: `re: ${lastUser(request)}` } : { status: 503 }));
    const ctx = await started();
    await ctx.app.bus.publishInbound(userMessage("n", "remember 42"));
    await ctx.channel.waitFor(1);
    await ctx.app.bus.publishInbound(userMessage("n", "hello?"));
    await ctx.app.bus.publishInbound(userMessage("n", "/new"));
    await ctx.channel.waitFor(2);
    expect(ctx.to("n")[1]).toBe(
      "Started a new conversation. Long-term memory is kept. The 2 messages that waited for the model are set aside.",
    );
    up = true;
    await ctx.app.bus.publishInbound(userMessage("n", "fresh"));
    await ctx.settled();
    expect(ctx.to("n").slice(2)).toEqual(["re: fresh"]);
    expect(asked("hello?")).toBe(0);
    expect(JSON.stringify(fake.requests.at(-1)?.messages)).not.toContain("remember 42");
  });

  it("is given up after outageHours with one notice, and its chat moves on", async () => {
    fake.respond((request) =>
      chatOf(request) === "h" ? { status: 504, message: "Gateway Timeout" } : { content: "ok" },
    );
    const ctx = await started(tempHome(), (config) => {
      config.agent.waitForModel = { refusedSeconds: 60, refusedTries: 10, outageHours: 1 / 3600 };
    });
    await ctx.app.bus.publishInbound(userMessage("h", "waiting"));
    await ctx.settled();
    expect(ctx.to("h")).toEqual([
      "The model is not answering right now (the model endpoint answered 504: Gateway Timeout). Your message is kept and I will answer as soon as it is back.",
      expect.stringMatching(
        /^Sorry, the model has not answered for 1 s \(the model endpoint answered 504: Gateway Timeout\), so I have set your message aside\./,
      ),
    ]);
  });
});

describe("across a restart", () => {
  it("keeps counting a waiting message's tries: it is given up once, asked no more than the bound, never answered twice", async () => {
    fake.respond((request) =>
      lastUser(request) === "odd" ? { status: 500, message: "boom" } : { content: `re: ${lastUser(request)}` },
    );
    const home = tempHome();
    const limits = (config: Config) => {
      config.agent.waitForModel = { refusedSeconds: 600, refusedTries: 4, outageHours: 24 };
      config.agent.circuitBreaker = { failureThreshold: 100, coolDownSeconds: 0.3 };
    };
    const first = await started(home, limits);
    await first.app.bus.publishInbound(userMessage("r", "odd"));
    await until(() => asked("odd") >= 2, "two tries before the restart");
    await first.app.stop();
    apps = [];
    const triesBefore = asked("odd");
    expect(triesBefore).toBeLessThan(4);
    expect(first.channel.sent).toEqual([]);
    // A try the stop cut short reached the endpoint, but no refusal came back to count: it is not one of the bound's.
    const db = new Database(join(home, "pincer.db"), { readonly: true });
    const counted = db.prepare("SELECT max(model_tries) FROM inbox").pluck().get() as number;
    db.close();
    const cut = triesBefore - counted;
    expect([0, 1]).toContain(cut);

    const second = await started(home, limits);
    await second.settled();
    expect(asked("odd")).toBe(4 + cut);
    expect(second.to("r")).toEqual([
      expect.stringMatching(/^Sorry, I could not get an answer to your message: .*boom/),
    ]);
    await second.app.stop();
    apps = [];

    const third = await started(home, limits);
    await third.app.bus.outboundIdle("console");
    await third.settled();
    expect(third.channel.sent).toEqual([]);
    expect(asked("odd")).toBe(4 + cut);
  });
});

describe("answers that trickle", () => {
  it("with modelTimeoutSeconds 1, nine chats on an endpoint that sends a byte at a time are all answered by the fallback", async () => {
    fake.respond((request) =>
      request.model === "backup-model"
        ? { content: `backup: ${lastUser(request)}` }
        : { content: "x".repeat(200), trickleMs: 50 },
    );
    const ctx = await started(tempHome(), (config) => {
      config.agent.stream = true;
      config.agent.modelTimeoutSeconds = 1;
      config.agent.maxConcurrentTurns = 8;
      config.agent.fallbackModels = ["backup-model"];
      config.agent.circuitBreaker = { failureThreshold: 3, coolDownSeconds: 60 };
    });
    const chats = Array.from({ length: 9 }, (_, i) => `c${i}`);
    for (const chat of chats) await ctx.app.bus.publishInbound(userMessage(chat, `hi ${chat}`));
    await until(() => ctx.channel.sent.length === 9, "nine answers", 10_000);
    for (const chat of chats) expect(ctx.to(chat)).toEqual([`backup: hi ${chat}`]);
    // The main model's circuit is open now: a new chat goes straight to the fallback.
    const main = () => fake.requests.filter((r) => r.model === "gpt-4.1-mini").length;
    const before = main();
    await ctx.app.bus.publishInbound(userMessage("late", "hi late"));
    await ctx.channel.waitFor(10);
    expect(ctx.to("late")).toEqual(["backup: hi late"]);
    expect(main()).toBe(before);
  });
});
