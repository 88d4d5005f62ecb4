import { existsSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { seesOwnerMemory } from "../src/access/policy.js";
import type { App } from "../src/app.js";
import type { InboundMessage } from "../src/bus/types.js";
import type { Config } from "../src/config/config.js";
import type { ChatMessage } from "../src/llm/model.js";
import { createTokenCounter } from "../src/llm/tokens.js";
import type { ChatRequest, FakeReply } from "./fakes/openai-server.js";
import { recordingChannel, sqliteOf, tempHome, testApp, userMessage } from "./helpers/app.js";
import { fakeModelForFile } from "./helpers/model.js";
import { hasSystemPackage } from "./helpers/system-packages.js";
import { until } from "./helpers/until.js";

const bwrap = hasSystemPackage("bwrap", "bubblewrap");

const counter = createTokenCounter();
const fake = fakeModelForFile();
let app: App | undefined;

beforeEach(() => {
  fake.respond(() => ({ content: "ok" }));
});
afterEach(async () => {
  await app?.stop();
  app = undefined;
});

const isConsolidation = (r: ChatRequest) =>
  String(r.messages[0]?.content).startsWith("You maintain the long-term memory");
const turnRequests = () => fake.requests.filter((r) => !isConsolidation(r));
const tokensOf = (r: ChatRequest) => counter.request(r.messages as unknown as ChatMessage[], r.tools);
const lastUserText = (r: ChatRequest) => String(r.messages.filter((m) => m.role === "user").at(-1)?.content);

/** Every tool result follows the assistant message that called it; nothing starts mid-exchange. */
function wellFormed(r: ChatRequest): boolean {
  const called = new Set<string>();
  if (r.messages[1]?.role !== "user") return false;
  for (const m of r.messages) {
    for (const c of (m.tool_calls ?? []) as Array<{ id: string }>) called.add(c.id);
    if (m.role === "tool" && !called.has(String(m.tool_call_id))) return false;
  }
  return true;
}

async function start(adjust?: (config: Config) => void, home = tempHome(), env: Record<string, string> = {}) {
  app = await testApp(fake.url, home, env, adjust);
  const channel = recordingChannel(app);
  await app.start([channel]);
  return { app, channel, home };
}

function groupMessage(chatId: string, text: string): InboundMessage {
  return { ...userMessage(chatId, text), isGroup: true };
}

/** Runs one memory_search call through the registry, as the model would, for the given conversation. */
function search(target: App, inbound: InboundMessage, query: string, limit?: number): Promise<string> {
  return target.registry.execute("memory_search", JSON.stringify({ query, limit }), {
    sessionKey: inbound.sessionKey,
    inbound,
    workspace: target.config.workspace,
    seesOwnerMemory: seesOwnerMemory(inbound, {
      allowFrom: {},
      shareWithGroups: target.config.memory.shareWithGroups,
      shareWithGuests: target.config.memory.shareWithGuests,
    }),
    signal: new AbortController().signal,
    bus: target.bus,
    log: pino({ level: "silent" }),
  });
}

const CHINESE = "我妹妹安娜下个月要搬到上海工作，她喜欢吃小笼包和喝绿茶，我们打算周末一起去看房子。";
const EMOJI = "🎂🎉🎈🥳🍰🎁✨🌟💐🕯️";

describe("token budget in any script", () => {
  it("keeps every request under the budget for Chinese and emoji conversations", async () => {
    fake.respond(() => ({ content: `${CHINESE}${EMOJI}`.repeat(3) }));
    const { channel } = await start((c) => {
      c.agent.contextTokens = 6000;
      c.memory.consolidate = false;
    });
    for (let i = 0; i < 25; i++) {
      await app?.bus.publishInbound(userMessage("cjk", `${i} ${CHINESE.repeat(3)} ${EMOJI.repeat(4)}`));
      await channel.waitFor(i + 1);
    }
    const budget = 6000 - 1500;
    const sizes = turnRequests().map(tokensOf);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(budget);
    // The budget was what bounded them (history was long enough to overflow it), not luck.
    expect(Math.max(...sizes)).toBeGreaterThan(budget * 0.7);
    // chars/4 would have let through about three times as much.
    const last = fake.requests.at(-1) as ChatRequest;
    const chars = last.messages.reduce((n, m) => n + String(m.content ?? "").length, 0);
    expect(chars / 4).toBeLessThan(tokensOf(last) / 2);
    expect(turnRequests().every(wellFormed)).toBe(true);
  });
});

describe("bounded turns", () => {
  it("runs 40 rounds of 60,000-character tool results without a request over the budget, and stores them all", {
    timeout: 150_000,
  }, async () => {
    fake.respond((request) => {
      const rounds = request.messages.filter((m) => m.role === "tool").length;
      if (!request.tools) return { content: `done after ${rounds} rounds` };
      return { toolCalls: [{ name: "exec", arguments: { command: "head -c 45000 /dev/urandom | base64 -w0" } }] };
    });
    const { channel } = await start((c) => {
      c.exec.maxOutputChars = 70_000;
      c.memory.consolidate = false;
    });
    await app?.bus.publishInbound(userMessage("big", "fill the context"));
    await until(() => channel.sent.length === 1, "the answer", 120_000);
    expect(channel.sent[0].text).toMatch(/^done after \d+ rounds$/);
    const requests = turnRequests();
    expect(requests).toHaveLength(41);
    const budget = 32_000 - 4096;
    for (const r of requests) {
      expect(tokensOf(r)).toBeLessThanOrEqual(budget);
      for (const m of r.messages.filter((x) => x.role === "tool"))
        expect(String(m.content).length).toBeLessThan(16_500);
    }
    // The registry cut each 60,000-character result and said how to read more.
    expect(String(requests[1].messages.at(-1)?.content)).toMatch(/pincer cut 44,\d{3} of 60,\d{3} characters/);
    expect(requests.every(wellFormed)).toBe(true);
    const stored = sqliteOf(app!).prepare("SELECT role, content FROM messages ORDER BY id").all() as Array<{
      role: string;
      content: string;
    }>;
    expect(stored.map((m) => m.role).join(",")).toBe(
      ["user", ...Array(40).fill("assistant,tool"), "assistant"].join(","),
    );
    // Each result is stored as it was run and first sent (the next turn's request starts with this one's), the
    // registry's cut included; only this turn's requests shortened them to fit.
    const results = stored.filter((m) => m.role === "tool").map((m) => m.content);
    expect(results[0] === String(requests[1].messages.at(-1)?.content)).toBe(true);
    expect(results.every((r) => r.length > 16_000 && r.length < 16_500 && r.includes("pincer cut 44,"))).toBe(true);
  });

  it("stores the finished rounds of a turn that ends in a model error", async () => {
    const replies: FakeReply[] = [
      { toolCalls: [{ name: "exec", arguments: { command: "echo found-it" } }] },
      { status: 500 },
      { content: "second answer" },
    ];
    fake.respond(() => replies.shift() ?? { content: "ok" });
    const { channel } = await start((c) => {
      c.memory.consolidate = false;
    });
    await app?.bus.publishInbound(userMessage("err", "look it up"));
    await channel.waitFor(1);
    expect(channel.sent[0].text).toMatch(/^Sorry, the model endpoint answered 500/);
    const rows = sqliteOf(app!).prepare("SELECT role, content, tool_calls FROM messages ORDER BY id").all() as Array<{
      role: string;
      content: string | null;
    }>;
    expect(rows.map((r) => r.role)).toEqual(["user", "assistant", "tool"]);
    expect(rows[2].content).toContain("found-it");
    await app?.bus.publishInbound(userMessage("err", "and now?"));
    await channel.waitFor(2);
    const next = fake.requests.at(-1) as ChatRequest;
    expect(JSON.stringify(next.messages)).toContain("found-it");
    expect(wellFormed(next)).toBe(true);
  });
});

describe("consolidation", () => {
  const FACT = "The user's sister Anna has her birthday on 5 March.";
  function respondWithSummaries() {
    let n = 0;
    fake.respond((request) => {
      if (isConsolidation(request)) {
        n++;
        return {
          content: JSON.stringify({ summary: `Summary ${n}: they talked about Anna and cake.`, facts: [FACT] }),
        };
      }
      const text = lastUserText(request);
      if (text.startsWith("use a tool") && request.messages.at(-1)?.role === "user") {
        return { toolCalls: [{ name: "exec", arguments: { command: "echo tool-output" } }] };
      }
      return { content: `Answer to: ${text.slice(0, 40)} ${"filler words for the answer ".repeat(20)}` };
    });
  }

  it("summarises the oldest turns by budget into a dated entry and MEMORY.md, keeping the rows and tool pairs", async () => {
    respondWithSummaries();
    const { channel, home } = await start((c) => {
      c.agent.contextTokens = 8000;
    });
    const say = async (text: string, n: number) => {
      await app?.bus.publishInbound(userMessage("me", text));
      await channel.waitFor(n);
    };
    await say("My sister Anna has her birthday on the fifth of March, remember it.", 1);
    for (let i = 2; i <= 30; i++) {
      await say(
        `${i % 3 === 0 ? "use a tool" : "chat"} number ${i} ${"some words to make the turn longer ".repeat(12)}`,
        i,
      );
    }
    await app?.consolidator.idle();
    const db = sqliteOf(app!);
    const entries = db?.prepare("SELECT * FROM memory_entries ORDER BY id").all() as Array<{
      text: string;
      first_message_id: number;
      last_message_id: number;
    }>;
    expect(entries.length).toBeGreaterThan(0);
    const through = db?.prepare("SELECT consolidated_through FROM conversations").pluck().get() as number;
    expect(through).toBe(entries.at(-1)?.last_message_id);
    // Consolidated rows stay in SQLite; each entry starts at a user message and ends before the next one.
    expect(db?.prepare("SELECT count(*) FROM messages").pluck().get()).toBeGreaterThan(60);
    for (const e of entries) {
      expect(db?.prepare("SELECT role FROM messages WHERE id = ?").pluck().get(e.first_message_id)).toBe("user");
      const next = db
        ?.prepare("SELECT role FROM messages WHERE id > ? ORDER BY id LIMIT 1")
        .pluck()
        .get(e.last_message_id);
      expect(next ?? "user").toBe("user");
    }
    // The first consolidation saw the first message; facts went to MEMORY.md once.
    const first = fake.requests.find(isConsolidation) as ChatRequest;
    expect(String(first.messages[1].content)).toContain("birthday on the fifth of March");
    const memory = readFileSync(join(home, "workspace", "MEMORY.md"), "utf8");
    expect(memory.split(FACT)).toHaveLength(2);
    expect(memory).toMatch(/## Learned \d{4}-\d{2}-\d{2}/);

    await app?.bus.publishInbound(userMessage("me", "what now?"));
    await channel.waitFor(31);
    const last = turnRequests().at(-1) as ChatRequest;
    // The summaries open the history (its first user message), after the system prompt and the tools.
    const head = String(last.messages[1].content);
    expect(last.messages[1].role).toBe("user");
    expect(head).toMatch(
      /^\[pincer: summaries of earlier turns[^\n]*\]\n(- \d{4}-\d{2}-\d{2}(?: – \d{4}-\d{2}-\d{2})?: Summary \d[^\n]*\n(Facts: [^\n]*\n)?)+\[end of summaries\]\n\n/,
    );
    expect(JSON.stringify(last.messages)).toContain(FACT);
    expect(String(last.messages[0].content)).not.toContain("Summary");
    expect(JSON.stringify(last.messages.slice(1))).not.toContain("fifth of March");
    expect(turnRequests().every(wellFormed)).toBe(true);
    expect(Math.max(...turnRequests().map(tokensOf))).toBeLessThanOrEqual(8000 - 2000);
    // memory_search still finds the consolidated message itself, with its date.
    const found = await search(app as App, userMessage("me", ""), "Anna birthday");
    expect(found).toMatch(/^\[\d{4}-\d{2}-\d{2} · (the user said|summary of earlier turns|MEMORY\.md)\]/);
    expect(found).toContain("fifth of March");
  });

  it("consolidates the conversation /new ends, and search still finds it from the new one", async () => {
    respondWithSummaries();
    const { channel, home } = await start();
    await app?.bus.publishInbound(userMessage("n", "My sister Anna has her birthday on the fifth of March."));
    await channel.waitFor(1);
    await app?.bus.publishInbound(userMessage("n", "/new"));
    await channel.waitFor(2);
    // It runs after the /new notice went out: wait for it.
    await until(() => fake.requests.some(isConsolidation), "the consolidation call");
    await app?.consolidator.idle();
    expect(fake.requests.filter(isConsolidation)).toHaveLength(1);
    expect(readFileSync(join(home, "workspace", "MEMORY.md"), "utf8")).toContain(FACT);
    await app?.bus.publishInbound(userMessage("n", "hello again"));
    await channel.waitFor(3);
    const last = turnRequests().at(-1) as ChatRequest;
    expect(String(last.messages[0].content)).toContain(FACT); // MEMORY.md is in the prompt
    expect(last.messages.filter((m) => m.role !== "system")).toHaveLength(1); // the old turns are not
    expect(await search(app as App, userMessage("n", ""), "fifth of March")).toContain("the user said");
  });
});

describe("memory_search", () => {
  it("ranks by BM25, finds Chinese and emoji, keeps conversations apart, and groups away from MEMORY.md", async () => {
    const { channel, home } = await start((c) => {
      c.memory.consolidate = false;
    });
    writeFileSync(join(home, "workspace", "MEMORY.md"), "# Memory\n\n- Owner's bank PIN hint: the blue notebook.\n");
    const send = async (msg: InboundMessage, n: number) => {
      await app?.bus.publishInbound(msg);
      await channel.waitFor(n);
    };
    await send(userMessage("a", "The garden needs water on Tuesday."), 1);
    await send(userMessage("a", "Garden party: garden lights, garden chairs, garden music!"), 2);
    await send(userMessage("a", CHINESE), 3);
    await send(userMessage("a", `party ${EMOJI}`), 4);
    await send(userMessage("b", "Secret plans of chat b about the garden."), 5);
    await send(groupMessage("g", "group talk about the garden"), 6);
    const a = userMessage("a", "");
    const ranked = (await search(app as App, a, "garden")).split("\n\n");
    expect(ranked[0]).toContain("«Garden» party: «garden» lights");
    expect(ranked.join("\n")).toContain("Tuesday");
    expect(ranked.join("\n")).not.toContain("Secret plans");
    expect(ranked.join("\n")).not.toContain("group talk");
    // Chinese: a query sharing no trigram with the text ("妹妹安娜" vs "妹妹安娜下") still finds it; two characters too.
    expect(await search(app as App, a, "安娜上海")).toContain("«上海»工作");
    expect(await search(app as App, a, "绿茶")).toContain("绿茶");
    expect(await search(app as App, a, "小笼包")).toMatch(/\d{4}-\d{2}-\d{2} · the user said\] .*«小笼包»/);
    expect(await search(app as App, a, "🎂🎉")).toContain("party");
    expect(await search(app as App, a, "🥳")).toContain("party");
    // MEMORY.md: direct chats see it, a group does not.
    expect(await search(app as App, a, "notebook")).toContain("MEMORY.md");
    const g = groupMessage("g", "");
    expect(await search(app as App, g, "notebook")).toBe('No memory matches "notebook".');
    expect(await search(app as App, g, "garden")).toContain("group talk");
    await app?.bus.publishInbound(groupMessage("g", "what do you know?"));
    await channel.waitFor(7);
    expect(String(fake.requests.at(-1)?.messages[0].content)).not.toContain("blue notebook");
  });

  it("treats FTS syntax in the model's query as text", async () => {
    const { channel } = await start((c) => {
      c.memory.consolidate = false;
    });
    await app?.bus.publishInbound(userMessage("q", 'the "river" near the (old) mill * star'));
    await channel.waitFor(1);
    const q = userMessage("q", "");
    for (const query of [
      '"',
      'river" OR "x',
      "NEAR(river mill, 1)",
      "river*",
      "*",
      "(((",
      "mill)))",
      "x:river",
      "^river",
      "river AND NOT",
      "-",
      "\\'",
      "🎂",
    ]) {
      const out = await search(app as App, q, query);
      expect(out, query).not.toMatch(/^Error: memory_search failed/);
    }
    expect(await search(app as App, q, "NEAR(river mill, 1)")).toContain("«river»");
    expect(await search(app as App, q, "...")).toMatch(/^Error: the query has no letters/);
    expect(await search(app as App, q, "x", 0)).toMatch(/^Error: invalid arguments/);
  });

  it("shows MEMORY.md in direct chats only, cut at memory.promptChars, and a group only when configured", async () => {
    const { channel, home } = await start((c) => {
      c.memory.consolidate = false;
      c.memory.promptChars = 500;
      c.memory.shareWithGroups = true;
    });
    writeFileSync(join(home, "workspace", "MEMORY.md"), `# Memory\n\nSTART ${"remembered ".repeat(200)}`);
    await app?.bus.publishInbound(groupMessage("g2", "hi"));
    await channel.waitFor(1);
    const system = String(fake.requests.at(-1)?.messages[0].content);
    expect(system).toContain("START");
    expect(system).toMatch(/MEMORY\.md continues for \d+ more characters/);
    expect(system.split("remembered").length).toBeLessThan(60);
    expect(existsSync(join(home, "pincer.db"))).toBe(true);
  });
});

describe.skipIf(!bwrap)("what consolidation relies on", () => {
  it("cannot be changed by exec or the file tools: entries live in pincer.db, outside their reach", async () => {
    const { channel, home } = await start(
      (c) => {
        c.memory.consolidate = false;
        c.exec.restrictToWorkspace = false;
      },
      realpathSync(tempHome()),
      { PINCER_SANDBOX: "bwrap" },
    );
    await app?.bus.publishInbound(userMessage("p", "remember the password hint: blue-notebook-77"));
    await channel.waitFor(1);
    const target = app as App;
    const ctx = userMessage("p", "");
    const call = (tool: string, args: object) =>
      target.registry.execute(tool, JSON.stringify(args), {
        sessionKey: ctx.sessionKey,
        inbound: ctx,
        workspace: target.config.workspace,
        seesOwnerMemory: true,
        signal: new AbortController().signal,
        bus: target.bus,
        log: pino({ level: "silent" }),
      });
    const db = join(home, "pincer.db");
    for (const [tool, args] of [
      ["read_file", { path: db }],
      ["read_file", { path: "../pincer.db" }],
      ["write_file", { path: "../pincer.db", content: "x" }],
      ["edit_file", { path: db, old_text: "a", new_text: "b" }],
      ["grep", { pattern: "blue-notebook", path: ".." }],
    ] as const) {
      expect(await call(tool, args), `${tool} ${JSON.stringify(args)}`).toMatch(/^Error|No matches/);
    }
    const exec = await call("exec", {
      command: `ls -a .. ; cat ../pincer.db ${db} 2>&1 | head -c 300; rm -f ../pincer.db ${db} 2>&1; echo done`,
    });
    expect(exec).not.toContain("blue-notebook");
    expect(exec).not.toContain("pincer.db\n");
    expect(exec).toContain("done");
    expect(await search(target, ctx, "blue-notebook")).toContain("«blue»-«notebook»-77");
  });
});
