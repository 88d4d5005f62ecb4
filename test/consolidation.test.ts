import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { toChatMessage } from "../src/agent/context.js";
import { createOpenAIModel } from "../src/llm/model.js";
import { createTokenCounter } from "../src/llm/tokens.js";
import { Consolidator } from "../src/memory/consolidator.js";
import { appendMemoryFacts } from "../src/memory/memory-file.js";
import { openDatabase } from "../src/store/sqlite/database.js";
import { openSqliteStore } from "../src/store/sqlite/sqlite-store.js";
import type { StoredMessage } from "../src/store/store.js";
import type { FakeReply } from "./fakes/openai-server.js";
import { tempHome } from "./helpers/app.js";
import { fakeModelForFile } from "./helpers/model.js";
import { until } from "./helpers/until.js";

const fake = fakeModelForFile();
const tokens = createTokenCounter();
const GOOD: FakeReply = {
  content: JSON.stringify({ summary: "They planned Anna's party.", facts: ["Anna is the user's sister."] }),
};

function setup(contextTokens = 4000, timeoutSeconds = 10) {
  const home = tempHome();
  const workspace = join(home, "workspace");
  mkdirSync(workspace);
  const db = openDatabase(join(home, "pincer.db"));
  const { conversations, memory: store } = openSqliteStore(db, {
    countTokens: (m) => tokens.rawMessage(toChatMessage(m)),
  });
  let now = Date.parse("2026-03-05T10:00:00Z");
  /** A consolidator on this store and the fake model; on the real clock unless given one. */
  const consolidatorOn = (clock?: () => Date) =>
    new Consolidator({
      store,
      model: createOpenAIModel({
        apiKey: "t",
        baseUrl: fake.url,
        model: "fake",
        timeoutSeconds,
        retries: 0,
        stream: false,
      }),
      tokens,
      log: pino({ level: "silent" }),
      timezone: "UTC",
      contextTokens: () => contextTokens,
      ...(clock ? { now: clock } : {}),
    });
  const consolidator = consolidatorOn(() => new Date(now));
  const turn = (i: number, extra: StoredMessage[] = []) =>
    conversations.append("console:me", [
      { role: "user", content: `question ${i} ${"about the party ".repeat(30)}` },
      ...extra,
      { role: "assistant", content: `answer ${i} ${"we will have cake ".repeat(30)}` },
    ]);
  const advance = (ms: number) => {
    now += ms;
  };
  const watermark = () => db.prepare("SELECT consolidated_through FROM conversations").pluck().get() as number;
  const entries = () => db.prepare("SELECT count(*) FROM memory_entries").pluck().get() as number;
  /** A new consolidator on the same store, as after a restart. */
  const restart = () => consolidatorOn();
  return { db, workspace, conversations, store, consolidator, restart, turn, advance, watermark, entries };
}

async function fill(s: ReturnType<typeof setup>, turns: number) {
  for (let i = 0; i < turns; i++) {
    await s.turn(
      i,
      i % 2 === 0
        ? [
            { role: "assistant", content: null, toolCalls: [{ id: `c${i}`, name: "exec", arguments: "{}" }] },
            { role: "tool", content: "output ".repeat(100), toolCallId: `c${i}` },
          ]
        : [],
    );
  }
}

describe("Consolidator", () => {
  it("does nothing while the history is within its share", async () => {
    const s = setup();
    await fill(s, 2);
    s.consolidator.afterTurn("console:me", s.workspace);
    await s.consolidator.idle();
    expect(fake.requests).toHaveLength(0);
    s.db.close();
  });

  it("survives a failing model and a garbage summary: nothing changes, it retries later with backoff", async () => {
    const s = setup();
    await fill(s, 12);
    const before = await s.store.pendingTokens(1);
    fake.enqueue({ status: 500 });
    s.consolidator.afterTurn("console:me", s.workspace);
    await s.consolidator.idle();
    expect(fake.requests).toHaveLength(1);
    expect([s.watermark(), s.entries(), await s.store.pendingTokens(1)]).toEqual([0, 0, before]);

    s.consolidator.afterTurn("console:me", s.workspace); // within the backoff: not even tried
    await s.consolidator.idle();
    expect(fake.requests).toHaveLength(1);

    s.advance(31_000);
    fake.enqueue({ content: "Sure! The user talked about a party." });
    s.consolidator.afterTurn("console:me", s.workspace);
    await s.consolidator.idle();
    expect(fake.requests).toHaveLength(2);
    expect([s.watermark(), s.entries()]).toEqual([0, 0]);

    s.advance(30_000); // the second failure doubled the wait to 60 s
    s.consolidator.afterTurn("console:me", s.workspace);
    await s.consolidator.idle();
    expect(fake.requests).toHaveLength(2);

    s.advance(31_000);
    fake.respond(() => GOOD);
    s.consolidator.afterTurn("console:me", s.workspace);
    await s.consolidator.idle();
    expect(s.entries()).toBeGreaterThan(0);
    expect(await s.store.pendingTokens(1)).toBeLessThanOrEqual(1000);
    // Never mid-exchange: the watermark is the last message before a user message.
    const next = s.db.prepare("SELECT role FROM messages WHERE id > ? ORDER BY id LIMIT 1").pluck().get(s.watermark());
    expect(next).toBe("user");
    expect(readFileSync(join(s.workspace, "MEMORY.md"), "utf8")).toContain("- Anna is the user's sister.");
    s.db.close();
  });

  it("gives up a summary that trickles in at the model's deadline, changing nothing", async () => {
    const s = setup(4000, 1);
    await fill(s, 12);
    // About 250 bytes at 100 ms each: 25 seconds to finish; the call may take one.
    fake.enqueue({ ...GOOD, trickleMs: 100 });
    const started = Date.now();
    s.consolidator.afterTurn("console:me", s.workspace);
    await s.consolidator.idle();
    expect(Date.now() - started).toBeLessThan(4000);
    expect(fake.requests).toHaveLength(1);
    expect([s.watermark(), s.entries()]).toEqual([0, 0]);
  });

  it("changes nothing when pincer stops in the middle of a consolidation, and finishes it after the restart", async () => {
    const s = setup();
    await fill(s, 12);
    fake.respond(() => ({ ...GOOD, delayMs: 5000 }));
    s.consolidator.afterTurn("console:me", s.workspace);
    await until(() => fake.requests.length > 0, "the consolidation call");
    await s.consolidator.stop();
    expect([s.watermark(), s.entries()]).toEqual([0, 0]);

    fake.respond(() => GOOD);
    const restarted = s.restart();
    restarted.afterTurn("console:me", s.workspace);
    await restarted.idle();
    expect(s.watermark()).toBeGreaterThan(0);
    s.db.close();
  });

  it("keeps a group's facts out of MEMORY.md, and a second run over the same messages stores nothing", async () => {
    const s = setup();
    await fill(s, 12);
    fake.respond(() => GOOD);
    s.consolidator.afterTurn("console:me", undefined);
    await s.consolidator.idle();
    expect(s.entries()).toBeGreaterThan(0);
    expect(() => readFileSync(join(s.workspace, "MEMORY.md"), "utf8")).toThrow();
    // The entry for a chunk is stored only if the watermark has not moved past it.
    const entries = s.entries();
    expect(
      await s.store.addEntry({
        sessionKey: "console:me",
        conversationId: 1,
        firstId: 1,
        throughId: 3,
        periodStart: 0,
        periodEnd: 0,
        text: "again",
        tokens: 3,
      }),
    ).toBe(false);
    expect(s.entries()).toBe(entries);
    s.db.close();
  });
});

describe("appendMemoryFacts", () => {
  it("adds only new facts, in place, and never writes through a symlink", async () => {
    const workspace = join(tempHome(), "ws");
    mkdirSync(workspace);
    expect(appendMemoryFacts(workspace, ["Likes tea.", "likes  TEA."], "2026-03-05")).toEqual(["Likes tea."]);
    expect(appendMemoryFacts(workspace, ["Likes tea.", "Has a cat."], "2026-03-06")).toEqual(["Has a cat."]);
    const text = readFileSync(join(workspace, "MEMORY.md"), "utf8");
    expect(text.match(/Likes tea/g)).toHaveLength(1);
    expect(text).toContain("## Learned 2026-03-06\n\n- Has a cat.");

    const outside = join(tempHome(), "outside.md");
    writeFileSync(outside, "precious\n");
    const linked = join(tempHome(), "ws2");
    mkdirSync(linked);
    symlinkSync(outside, join(linked, "MEMORY.md"));
    expect(appendMemoryFacts(linked, ["Evil fact."], "2026-03-05")).toEqual([]);
    expect(readFileSync(outside, "utf8")).toBe("precious\n");
  });
});
