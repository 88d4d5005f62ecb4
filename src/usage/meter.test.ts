import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createTokenCounter } from "../llm/tokens.js";
import { openSqliteStore } from "../store/sqlite/sqlite-store.js";
import type { Store } from "../store/store.js";
import type { UsageLimits } from "./meter.js";
import { UsageLimitError, UsageMeter } from "./meter.js";

const stores: Store[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
});

/** A meter on a real SQLite file with a clock the test moves, in Berlin. */
function meterAt(start: string, limits: UsageLimits) {
  const store = openSqliteStore(join(mkdtempSync(join(tmpdir(), "pincer-meter-")), "p.db"));
  stores.push(store);
  const clock = { now: Date.parse(start) };
  const meter = new UsageMeter({
    store: store.usage,
    tokens: createTokenCounter(),
    config: { usage: { ...limits, prices: {} }, timezone: "Europe/Berlin", openai: { model: "m" } },
    log: { warn: () => {} },
    now: () => new Date(clock.now),
  });
  let calls = 0;
  // Each ask is a turn of its own, as the worker wraps the model once a turn.
  const model = {
    complete: async () => {
      calls++;
      return { content: "ok", toolCalls: [], usage: { promptTokens: 60, completionTokens: 0 } };
    },
  };
  const ask = () => meter.wrap(model, { sessionKey: "telegram:1", kind: "conversation" }).complete({ messages: [] });
  return { clock, ask, calls: () => calls };
}

const refusal = async (ask: () => Promise<unknown>): Promise<UsageLimitError> => {
  const err = await ask().catch((e: unknown) => e);
  expect(err).toBeInstanceOf(UsageLimitError);
  return err as UsageLimitError;
};

describe("UsageMeter at midnight", () => {
  it("tells a chat once a day; the day after local midnight starts with nothing spent", async () => {
    // 23:59 in Berlin on 1 December (22:59 UTC).
    const { clock, ask, calls } = meterAt("2026-12-01T22:59:00Z", { dailyTokens: 100 });
    await ask();
    await ask(); // 60 < 100: allowed, now 120
    const first = await refusal(ask);
    expect(first.notice).toMatch(
      /^I cannot answer now: .*\(120 of 100 tokens.*It resets Wed 2026-12-02 00:00 Europe\/Berlin \(UTC\+01:00\)/,
    );
    expect((await refusal(ask)).notice).toBeUndefined();
    clock.now = Date.parse("2026-12-01T22:59:59.999Z");
    expect((await refusal(ask)).notice).toBeUndefined();
    clock.now = Date.parse("2026-12-01T23:00:00Z"); // midnight in Berlin
    await ask();
    await ask();
    expect(calls()).toBe(4);
    // A new period: told again, once.
    expect((await refusal(ask)).notice).toMatch(/It resets Thu 2026-12-03 00:00/);
    expect((await refusal(ask)).notice).toBeUndefined();
  });
});
