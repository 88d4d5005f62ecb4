import { afterEach, describe, expect, it } from "vitest";
import type { App } from "../src/app.js";
import { statusText } from "../src/cli/status.js";
import type { Config } from "../src/config/config.js";
import { type ChatRequest, type FakeOpenAI, type FakeReply, startFakeOpenAI } from "./fakes/openai-server.js";
import { recordingChannel, tempHome, testApp, userMessage } from "./helpers/app.js";
import { groupChat, message, startTelegramHarness, type TelegramHarness, user } from "./helpers/telegram.js";
import { until } from "./helpers/until.js";

/** Background helpers: the spawn tool, its caps and limits, and results coming back to the right chat. */

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const clean of cleanups.splice(0).reverse()) await clean();
});

const isHelper = (r: ChatRequest) => String(r.messages[0]?.content).startsWith("You are a background helper");
const lastContent = (r: ChatRequest) => String(r.messages.at(-1)?.content ?? "");
const toolNames = (r: ChatRequest) => (r.tools ?? []).map((t) => t.function.name);

/** The result of one tool call, found in the request that followed it. */
function toolResults(requests: ChatRequest[]): string[] {
  const last = requests.at(-1);
  return (last?.messages ?? []).filter((m) => m.role === "tool").map((m) => String(m.content));
}

async function consoleApp(model: FakeOpenAI, adjust?: (config: Config) => void, home = tempHome()) {
  const app = await testApp(model.url, home, {}, adjust);
  const channel = recordingChannel(app);
  await app.start([channel]);
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await app.stop();
  };
  cleanups.push(stop);
  return { app, channel, home, stop };
}

function runs(app: App) {
  return app.store.helperRuns.recent(100);
}

describe("spawn", () => {
  let h: TelegramHarness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it("answers at once, and the helper's result reaches the same forum topic after the acknowledgement", async () => {
    h = await startTelegramHarness();
    const helperRequests: ChatRequest[] = [];
    h.model.respond((request): FakeReply => {
      if (isHelper(request)) {
        helperRequests.push(request);
        return { content: "Garden notes: tomatoes in bed 2, beans need water." };
      }
      if (request.messages.at(-1)?.role === "tool") return { content: "A helper is on it.", delayMs: 400 };
      if (lastContent(request).includes("[system: helper]"))
        return { content: "Done: tomatoes in bed 2, water the beans." };
      return {
        toolCalls: [
          { name: "spawn", arguments: { task: "Summarise every file about the garden in notes/", label: "garden" } },
        ],
      };
    });
    const forum = groupChat(-1007, true);
    const ann = user(42, "Ann");
    const root = { message_id: 55, chat: forum, date: 1, from: ann, forum_topic_created: { name: "t", icon_color: 1 } };
    h.telegram.pushUpdate(
      message(forum, ann, {
        text: "@pincer_test_bot summarise my garden notes, take your time",
        message_thread_id: 55,
        is_topic_message: true,
        reply_to_message: root as never,
      }),
    );
    const relay = await h.telegram.waitFor(() => h?.telegram.sent.find((m) => m.text.startsWith("Done:")), 10_000);
    const ack = h.telegram.sent.find((m) => m.text === "A helper is on it.");
    expect(ack).toBeDefined();
    expect(h.telegram.sent.indexOf(ack as never)).toBeLessThan(h.telegram.sent.indexOf(relay));
    expect(relay).toMatchObject({ chatId: "-1007", threadId: 55 });
    expect(ack).toMatchObject({ chatId: "-1007", threadId: 55 });

    // A fresh context: the task is the helper's only message, and it has no spawn, message or cron.
    expect(helperRequests).toHaveLength(1);
    expect(helperRequests[0].messages.map((m) => m.role)).toEqual(["system", "user"]);
    expect(helperRequests[0].messages[1].content).toBe("Summarise every file about the garden in notes/");
    expect(toolNames(helperRequests[0])).toEqual(expect.arrayContaining(["read_file", "exec"]));
    expect(toolNames(helperRequests[0])).not.toEqual(expect.arrayContaining(["spawn"]));
    expect(toolNames(helperRequests[0]).filter((n) => ["spawn", "message", "cron"].includes(n))).toEqual([]);

    // The relay turn saw the helper's result as a system message in the topic's conversation.
    const relayRequest = h.model.requests.find((r) => lastContent(r).includes("[system: helper]"));
    expect(lastContent(relayRequest as ChatRequest)).toContain("Garden notes: tomatoes in bed 2");
    const [run] = await runs(h.app);
    expect(run).toMatchObject({ status: "done", label: "garden", sessionKey: "telegram:-1007:thread:55" });
    expect(run.result).toContain("tomatoes");
    // Every model call is counted under the topic: the turn's two, then the helper's own and the relay turn's.
    const counted = await h.app.store.usage.groups(0, 0, "telegram:-1007:thread:55");
    expect(counted.filter((g) => g.here).map((g) => [g.kind, g.calls])).toEqual([
      ["conversation", 2],
      ["helper", 2],
    ]);
  });
});

describe("spawn limits", () => {
  it("caps helpers per conversation and overall; a model asking for 50 gets clear errors; /status lists and /stop cancels", async () => {
    const model = await startFakeOpenAI();
    cleanups.push(() => model.close());
    model.respond((request): FakeReply => {
      if (isHelper(request)) return { content: "slow result", delayMs: 30_000 };
      if (request.messages.at(-1)?.role === "tool") return { content: "started what I could" };
      const spawns = lastContent(request).includes("fifty") ? 50 : 2;
      return {
        toolCalls: Array.from({ length: spawns }, (_, i) => ({ name: "spawn", arguments: { task: `task ${i}` } })),
      };
    });
    const { app, channel } = await consoleApp(model, (config) => {
      config.helpers.maxPerConversation = 2;
      config.helpers.maxConcurrent = 3;
    });
    await app.bus.publishInbound(userMessage("a", "spawn fifty helpers"));
    await channel.waitFor(1);
    const results = toolResults(model.requests.filter((r) => !isHelper(r)));
    expect(results).toHaveLength(50);
    expect(results.filter((r) => r.startsWith("Helper h-"))).toHaveLength(2);
    expect(results.slice(2).every((r) => r.startsWith("Error: this conversation already has 2 helpers running"))).toBe(
      true,
    );

    await app.bus.publishInbound(userMessage("b", "two more"));
    await channel.waitFor(2);
    const second = toolResults(model.requests.filter((r) => !isHelper(r)));
    expect(second[0]).toMatch(/^Helper h-/);
    expect(second[1]).toMatch(/^Error: 3 helpers are running across all chats \(the limit is 3\)/);
    expect((await runs(app)).filter((r) => r.status === "running")).toHaveLength(3);
    // `pincer status` reads the same table from the database file.
    const status = await statusText(app.config);
    expect(status).toMatch(/^helpers: +3 running; latest 3:$/m);
    expect(status).toMatch(/^ {2}h-[0-9a-f]{8} running +\S+ console:b: task 0$/m);

    await app.bus.publishInbound(userMessage("a", "/status"));
    await channel.waitFor(3);
    expect(channel.sent[2].text).toContain("Helpers: 2 running here, 3 in all");
    await app.bus.publishInbound(userMessage("a", "/stop"));
    await channel.waitFor(4);
    expect(channel.sent[3].text).toBe("Stopping 2 background helpers.");
    await until(async () => (await runs(app)).filter((r) => r.status === "cancelled").length === 2, "cancelled runs");
    expect(app.helpers.list().map((h) => h.sessionKey)).toEqual(["console:b"]);
  });

  it("stops a helper at its wall-clock limit and a tool-looping helper at its iteration limit, and says so", async () => {
    const model = await startFakeOpenAI();
    cleanups.push(() => model.close());
    model.respond((request): FakeReply => {
      if (isHelper(request)) {
        const task = String(request.messages[1].content);
        if (task === "hang") return { content: "too late", delayMs: 20_000 };
        // "loop": never stops calling tools; only the iteration limit ends it.
        if (String(request.messages.at(-1)?.content).includes("used all tool calls")) return { content: "gave up" };
        return { toolCalls: [{ name: "list_dir", arguments: {} }] };
      }
      if (request.messages.at(-1)?.role === "tool") return { content: "on it" };
      if (lastContent(request).includes("[system: helper]")) return { content: `relayed: ${lastContent(request)}` };
      return { toolCalls: [{ name: "spawn", arguments: { task: lastContent(request) } }] };
    });
    const { app, channel } = await consoleApp(model, (config) => {
      config.helpers.timeoutSeconds = 1;
      config.helpers.maxIterations = 3;
    });
    const started = Date.now();
    await app.bus.publishInbound(userMessage("t", "hang"));
    await until(() => channel.sent.find((m) => m.text.startsWith("relayed:")), "the timeout relay");
    expect(Date.now() - started).toBeLessThan(5000);
    const relay = channel.sent.find((m) => m.text.startsWith("relayed:"));
    expect(relay?.text).toContain("did not finish within its time limit of 1 s");
    expect((await runs(app))[0].status).toBe("timeout");

    await app.bus.publishInbound(userMessage("l", "loop"));
    await until(() => channel.sent.filter((m) => m.text.startsWith("relayed:")).length === 2, "the loop relay");
    const loopRuns = model.requests.filter((r) => isHelper(r) && r.messages[1].content === "loop");
    // maxIterations model calls with tools, then one more without them for the final answer.
    expect(loopRuns).toHaveLength(4);
    expect(loopRuns[3].tools ?? []).toEqual([]);
    expect((await runs(app)).find((r) => r.task === "loop")?.status).toBe("done");
  });

  it("a helper cannot call spawn, message or cron", async () => {
    const model = await startFakeOpenAI();
    cleanups.push(() => model.close());
    const helperResults: string[] = [];
    model.respond((request): FakeReply => {
      if (isHelper(request)) {
        if (request.messages.at(-1)?.role === "tool") {
          helperResults.push(...request.messages.filter((m) => m.role === "tool").map((m) => String(m.content)));
          return { content: "could not" };
        }
        return {
          toolCalls: [
            { name: "spawn", arguments: { task: "recurse" } },
            { name: "message", arguments: { content: "hi user" } },
            { name: "cron", arguments: { action: "list" } },
          ],
        };
      }
      if (request.messages.at(-1)?.role === "tool") return { content: "on it" };
      if (lastContent(request).includes("[system: helper]")) return { content: "relayed" };
      return { toolCalls: [{ name: "spawn", arguments: { task: "try to escape" } }] };
    });
    const { app, channel } = await consoleApp(model);
    await app.bus.publishInbound(userMessage("x", "go"));
    await until(() => channel.sent.find((m) => m.text === "relayed"), "the relay");
    expect(helperResults).toHaveLength(3);
    for (const [i, name] of ["spawn", "message", "cron"].entries()) {
      expect(helperResults[i]).toMatch(new RegExp(`^Error: unknown tool "${name}"`));
    }
    expect(channel.sent.map((m) => m.text)).toEqual(["on it", "relayed"]);
    expect(await runs(app)).toHaveLength(1);
  });

  it("a restart during a helper marks it interrupted and tells the chat once", async () => {
    const model = await startFakeOpenAI();
    cleanups.push(() => model.close());
    model.respond((request): FakeReply => {
      if (isHelper(request)) return { content: "never arrives", delayMs: 30_000 };
      if (request.messages.at(-1)?.role === "tool") return { content: "on it" };
      if (lastContent(request).includes("[system: helper]")) return { content: `notice: ${lastContent(request)}` };
      return { toolCalls: [{ name: "spawn", arguments: { task: "long job", label: "long" } }] };
    });
    const home = tempHome();
    const first = await consoleApp(model, undefined, home);
    await first.app.bus.publishInbound(userMessage("r", "do the long job"));
    await until(() => model.requests.some(isHelper), "the helper's model call");
    await first.channel.waitFor(1);
    await first.stop();

    const second = await consoleApp(model, undefined, home);
    await second.channel.waitFor(1);
    expect(second.channel.sent[0].text).toMatch(/^notice: .*"long".*pincer was restarted while it worked/s);
    expect((await runs(second.app))[0].status).toBe("interrupted");
    await second.stop();

    const third = await consoleApp(model, undefined, home);
    model.respond(() => ({ content: "pong" }));
    await third.app.bus.publishInbound(userMessage("r", "ping"));
    await third.channel.waitFor(1);
    expect(third.channel.sent.map((m) => m.text)).toEqual(["pong"]);
  });

  it("a turn relaying a helper's result cannot start another helper (no endless chain)", async () => {
    const model = await startFakeOpenAI();
    cleanups.push(() => model.close());
    model.respond((request): FakeReply => {
      if (isHelper(request)) return { content: "found it" };
      const last = request.messages.at(-1);
      if (last?.role === "tool") return { content: `after tool: ${String(last.content).slice(0, 60)}` };
      // The model tries to chain: every turn, the relay included, asks for another helper.
      return { toolCalls: [{ name: "spawn", arguments: { task: "again" } }] };
    });
    const { app, channel } = await consoleApp(model);
    await app.bus.publishInbound(userMessage("c", "start"));
    await channel.waitFor(2);
    expect(channel.sent[1].text).toMatch(/^after tool: Error: this turn relays a helper's result/);
    await until(() => app.helpers.list().length === 0, "no helper running");
    expect(await runs(app)).toHaveLength(1);
  });
});
