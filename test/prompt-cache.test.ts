import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { App } from "../src/app.js";
import type { ChatRequest } from "./fakes/openai-server.js";
import { recordingChannel, sqliteOf, tempHome, testApp, userMessage } from "./helpers/app.js";
import { fakeModelForFile } from "./helpers/model.js";

/**
 * The prompt's shape for the server's cache, through the real app (SQLite, bus, worker) and a scripted model over
 * HTTP: what stays the same from turn to turn stays byte for byte the same, and the time the model needs rides in the
 * newest user message.
 */

const fake = fakeModelForFile();
const apps: App[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.stop().catch(() => {});
});

const MINUTE = 60_000;
const METADATA = /\[pincer metadata: current time \w{3} (\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}) \(UTC\)\]$/;

/** The time the newest user message says it is, as the model would read it (minute precision). */
function timeSaid(request: ChatRequest): number | undefined {
  const user = request.sent.findLast((m) => m.role === "user");
  const said = METADATA.exec(String(user?.content ?? ""));
  return said ? Date.parse(`${said[1]}T${said[2]}:00Z`) : undefined;
}

describe("a prompt the server's cache can reuse", () => {
  it("keeps the system prompt byte-identical across minute boundaries and an hour of silence; the time comes in the user's message, and a reminder 'in 20 minutes' is set from it", async () => {
    fake.respond((request) => {
      const last = request.messages.at(-1);
      if (last?.role === "tool") return { content: `done: ${String(last.content)}` };
      if (String(last?.content).includes("in 20 minutes")) {
        const now = timeSaid(request);
        if (now === undefined) return { content: "I do not know what time it is." };
        const at = new Date(now + 20 * MINUTE).toISOString().slice(0, 16);
        return { toolCalls: [{ name: "cron", arguments: { action: "add", message: "Call Anna", at } }] };
      }
      return { content: `noted: ${String(last?.content)}` };
    });
    // The first two messages an hour ago, a minute apart; the third now. The first lands half a minute into its minute,
    // so the time its turn takes cannot carry the second past the next minute (the stamps say minutes).
    let offset = -60 * MINUTE + 30_000 - (Date.now() % MINUTE);
    const home = tempHome();
    const app = await testApp(fake.url, home, {}, undefined, undefined, {
      now: () => new Date(Date.now() + offset),
    });
    apps.push(app);
    const channel = recordingChannel(app);
    await app.start([channel]);
    await app.bus.publishInbound(userMessage("clock", "hello"));
    await channel.waitFor(1);
    offset += MINUTE + 1000;
    await app.bus.publishInbound(userMessage("clock", "still there?"));
    await channel.waitFor(2);
    offset = 0;
    await app.bus.publishInbound(userMessage("clock", "remind me in 20 minutes to call Anna"));
    await channel.waitFor(3);
    expect(channel.sent[2].text).toMatch(/^done: Scheduled job/);

    const requests = fake.requests.filter((r) => r.tools !== undefined);
    expect(requests.length).toBe(4);
    // One system message, first, and the same bytes in every request.
    for (const r of requests) {
      expect(r.sent.filter((m) => m.role === "system")).toHaveLength(1);
      expect(r.sent[0].content === requests[0].sent[0].content).toBe(true);
    }
    expect(String(requests[0].sent[0].content)).not.toMatch(/\d{2}:\d{2}/);
    // Each user message says the time it arrived; the first two differ by a minute, the last by an hour.
    const said = requests.slice(0, 3).map(timeSaid) as number[];
    expect(said[1] - said[0]).toBe(MINUTE);
    expect(Math.abs(said[2] - Date.now())).toBeLessThan(2 * MINUTE);
    // Each request starts with the whole one before it (its answer and the new message come after).
    for (let i = 1; i < requests.length; i++) {
      const before = requests[i - 1].sent;
      expect(JSON.stringify(requests[i].sent.slice(0, before.length))).toBe(JSON.stringify(before));
    }
    // The reminder is due 20 minutes after now, not after the time of the conversation's start.
    const [job] = await app.store.jobs.listAll();
    expect(Math.abs(job.nextRunAt - (Date.now() + 20 * MINUTE))).toBeLessThan(2 * MINUTE);
  });

  it("trims the history in steps to its low-water mark: between trim points each request starts with the one before, the system prompt and tools never change on consolidation's account, and the trim point survives a restart", {
    timeout: 120_000,
  }, async () => {
    const FACT = "The user's sister Anna has her birthday on 5 March.";
    let summaries = 0;
    fake.respond((request) => {
      if (String(request.messages[0]?.content).startsWith("You maintain the long-term memory")) {
        summaries++;
        return { content: JSON.stringify({ summary: `Summary ${summaries}: Anna and cake.`, facts: [FACT] }) };
      }
      const last = request.messages.at(-1);
      if (last?.role === "tool") return { content: `found: ${String(last.content).slice(0, 300)}` };
      const text = String(last?.content);
      if (text.startsWith("when is Anna's birthday")) {
        return { toolCalls: [{ name: "memory_search", arguments: { query: "Anna birthday" } }] };
      }
      return { content: `Answer to ${text.slice(0, 20)}: ${"words of a longer answer ".repeat(15)}` };
    });
    const home = tempHome();
    const startApp = async () => {
      const app = await testApp(fake.url, home, {}, (c) => {
        c.agent.contextTokens = 8000;
      });
      apps.push(app);
      const channel = recordingChannel(app);
      await app.start([channel]);
      return { app, channel };
    };
    let { app, channel } = await startApp();
    let sent = 0;
    const say = async (text: string) => {
      await app.bus.publishInbound(userMessage("long", text));
      await channel.waitFor(++sent);
    };
    await say("My sister Anna has her birthday on the fifth of March.");
    for (let i = 2; i <= 40; i++) await say(`message ${i} ${"a few words to fill the window ".repeat(10)}`);
    await app.consolidator.idle();
    const trimmedThrough = () =>
      sqliteOf(app).prepare("SELECT trimmed_through FROM conversations").pluck().get() as number;
    const beforeRestart = trimmedThrough();
    expect(beforeRestart).toBeGreaterThan(0);
    await app.stop();
    apps.splice(apps.indexOf(app), 1);
    ({ app, channel } = await startApp());
    sent = 0;
    expect(trimmedThrough()).toBe(beforeRestart);
    await say("and after a restart?");
    await say("when is Anna's birthday?");

    const turns = fake.requests.filter((r) => r.tools !== undefined);
    const starts = turns.filter((r) => r.sent.at(-1)?.role === "user");
    let trims = 0;
    let summariesSeen = false;
    for (let i = 1; i < starts.length; i++) {
      const [before, now] = [starts[i - 1].sent, starts[i].sent];
      // The tools are the same bytes in every request; a trim point shows as a new start of the history.
      expect(JSON.stringify(starts[i].tools)).toBe(JSON.stringify(starts[0].tools));
      if (JSON.stringify(now[1]) !== JSON.stringify(before[1])) trims++;
      // Between trim points, the whole request before comes first: system prompt (MEMORY.md's learned facts wait
      // for the next trim point), history and all.
      else expect(JSON.stringify(now.slice(0, before.length))).toBe(JSON.stringify(before));
      summariesSeen ||= String(now[1]?.content).startsWith("[pincer: summaries of earlier turns");
    }
    // A turn at a time would have cut the history on every turn once the window was full.
    expect(trims).toBeGreaterThan(0);
    expect(trims).toBeLessThanOrEqual(8);
    expect(starts.length).toBe(42);
    // The summaries reach the model, at the head of the history; MEMORY.md learned the fact in the meantime.
    expect(summariesSeen).toBe(true);
    expect(readFileSync(join(home, "workspace", "MEMORY.md"), "utf8")).toContain(FACT);
    // The restart changed nothing of the prompt: the request after it starts with the one before it.
    const [lastBefore, firstAfter] = [starts[39].sent, starts[40].sent];
    expect(JSON.stringify(firstAfter.slice(0, lastBefore.length))).toBe(JSON.stringify(lastBefore));
    // The trimmed part is still found: the first message is out of the prompt, memory_search brings it back.
    const question = starts[41];
    expect(JSON.stringify(question.sent)).not.toContain("fifth of March");
    expect(channel.sent.at(-1)?.text).toContain("fifth of March");
  });

  it("adds cache_control markers at the stable boundaries only for a model configured to take them", async () => {
    fake.respond(() => ({ content: "ok" }));
    const home = tempHome();
    const app = await testApp(fake.url, home, {}, (c) => {
      c.openai.model = "claude-like";
      c.agent.cacheMarkers = ["claude-like"];
      c.agent.models = [{ name: "plain" }];
    });
    apps.push(app);
    const channel = recordingChannel(app);
    await app.start([channel]);
    await app.bus.publishInbound(userMessage("marks", "hello"));
    await channel.waitFor(1);
    await app.bus.publishInbound(userMessage("marks", "/model plain"));
    await channel.waitFor(2);
    await app.bus.publishInbound(userMessage("marks", "and now"));
    await channel.waitFor(3);
    const [marked, plain] = fake.requests.filter((r) => r.tools !== undefined);
    expect(marked.model).toBe("claude-like");
    const mark = { type: "ephemeral" };
    expect(marked.sent[0].content).toEqual([{ type: "text", text: expect.any(String), cache_control: mark }]);
    expect(marked.sent.at(-1)?.content).toEqual([
      { type: "text", text: expect.stringMatching(/^hello\n\n\[pincer metadata/), cache_control: mark },
    ]);
    expect(plain.model).toBe("plain");
    expect(JSON.stringify(plain.sent)).not.toContain("cache_control");
  });
});
