import { expect, it } from "vitest";
import type { UsageEntry } from "../../src/store/store.js";
import { SLOT_MS } from "../../src/store/usage.js";
import type { Fresh } from "./store-conformance-jobs.js";

const DAY = 24 * 3600_000;
const call = (sessionKey: string, at: number, extra: Partial<UsageEntry> = {}): UsageEntry => ({
  sessionKey,
  kind: "conversation",
  model: "small",
  promptTokens: 100,
  completionTokens: 10,
  cachedTokens: 0,
  estimated: false,
  cost: 0.5,
  at,
  ...extra,
});

/** The usage table: what the budgets, /usage and the page add up, the same on both engines. */
export function describeUsageConformance(fresh: Fresh): void {
  it("adds up model calls per day, month and chat; two processes recording at once lose none", async () => {
    const { store, open } = await fresh();
    const other = await open();
    const monthStart = Date.UTC(2026, 11, 1);
    const dayStart = monthStart + 14 * DAY;
    // Two processes of a cluster recording at once: 2 × 50 calls today in chat a.
    await Promise.all(
      [store, other].flatMap((s) => Array.from({ length: 50 }, (_, i) => s.usage.record(call("a", dayStart + i)))),
    );
    await store.usage.record(call("b", dayStart + 5, { kind: "reminder", cost: undefined, estimated: true }));
    await store.usage.record(call("a", monthStart + DAY, { model: "big", cachedTokens: 40, cost: 2 }));
    await store.usage.record(call("a", monthStart - 1, { cost: 100 })); // last month: counted nowhere
    expect(await store.usage.spent("a", dayStart, monthStart)).toEqual({
      dayTokens: 101 * 110,
      monthCost: 52,
      chatDayTokens: 100 * 110,
      chatMonthCost: 52,
      personDayTokens: 0,
      personMonthCost: 0,
    });
    const groups = await other.usage.groups(monthStart, dayStart, "b");
    expect(groups).toHaveLength(3);
    expect(groups).toContainEqual({
      kind: "reminder",
      model: "small",
      here: true,
      today: true,
      calls: 1,
      promptTokens: 100,
      completionTokens: 10,
      cachedTokens: 0,
      cost: 0,
      unpriced: 1,
      estimated: 1,
    });
    expect(groups).toContainEqual(
      expect.objectContaining({ model: "big", here: false, today: false, cachedTokens: 40 }),
    );
    expect(groups).toContainEqual(expect.objectContaining({ kind: "conversation", today: true, calls: 100, cost: 50 }));
    expect(await store.usage.chats(monthStart)).toEqual([
      expect.objectContaining({ sessionKey: "a", calls: 101, promptTokens: 10100, cost: 52, unpriced: 0 }),
      expect.objectContaining({ sessionKey: "b", calls: 1, cost: 0, unpriced: 1 }),
    ]);
    expect(await store.usage.slots(dayStart)).toEqual([{ slot: dayStart / SLOT_MS, tokens: 101 * 110, cost: 50 }]);
  });
  it("shows a chat only its own agent's calls beside its own; the whole (budgets, the CLI) sums every agent", async () => {
    const { store } = await fresh();
    const monthStart = Date.UTC(2026, 11, 1);
    const dayStart = monthStart + 14 * DAY;
    await store.usage.record(call("telegram:1", dayStart + 1));
    await store.usage.record(call("telegram:2", dayStart + 2, { cost: 1 }));
    await store.usage.record(call("shop/telegram:1", dayStart + 3, { model: "shop-model", cost: 7 }));
    const shop = await store.usage.groups(monthStart, dayStart, "shop/telegram:9");
    expect(shop).toEqual([expect.objectContaining({ model: "shop-model", here: false, calls: 1, cost: 7 })]);
    const main = await store.usage.groups(monthStart, dayStart, "telegram:1");
    expect(main.map((g) => [g.model, g.here, g.cost]).sort()).toEqual([
      ["small", false, 1],
      ["small", true, 0.5],
    ]);
    expect((await store.usage.groups(monthStart, dayStart)).reduce((n, g) => n + g.calls, 0)).toBe(3);
    expect((await store.usage.spent("telegram:1", dayStart, monthStart)).monthCost).toBe(8.5);
  });

  it("adds up one person's calls only, wherever they were made (a guest's /usage)", async () => {
    const { store } = await fresh();
    const monthStart = Date.UTC(2026, 11, 1);
    const dayStart = monthStart + 14 * DAY;
    await store.usage.record(call("telegram:-100", dayStart + 1, { person: "telegram:77" }));
    await store.usage.record(call("telegram:77", monthStart + DAY, { person: "telegram:77", model: "big" }));
    await store.usage.record(call("telegram:-100", dayStart + 2, { person: "telegram:42", promptTokens: 9000 }));
    await store.usage.record(call("system:heartbeat", dayStart + 3));
    const theirs = await store.usage.groups(monthStart, dayStart, undefined, "telegram:77");
    expect(theirs.map((g) => [g.model, g.today, g.calls, g.promptTokens])).toEqual([
      ["big", false, 1, 100],
      ["small", true, 1, 100],
    ]);
    expect(await store.usage.groups(monthStart, dayStart, undefined, "telegram:5")).toEqual([]);
    expect((await store.usage.groups(monthStart, dayStart)).reduce((n, g) => n + g.calls, 0)).toBe(4);
    // Their role's budgets compare what they spent, in any chat.
    expect(await store.usage.spent("telegram:-100", dayStart, monthStart, "telegram:77")).toMatchObject({
      personDayTokens: 110,
      personMonthCost: 1,
    });
  });
}
