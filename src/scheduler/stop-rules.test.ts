import { describe, expect, it } from "vitest";
import type { CronJob } from "../store/store.js";
import { mayActOn } from "./jobs-chat.js";
import { dayCapReached, effectiveLimits, limitsText, planSlot, runCapReached, withLimits } from "./stop-rules.js";

const MIN = 60_000;
const job = (overrides: Partial<CronJob> = {}): CronJob => ({
  id: "j1",
  message: "stretch",
  schedule: { kind: "every", everySeconds: 60, anchor: 0 },
  tz: "UTC",
  origin: { channel: "telegram", chatId: "42", sessionKey: "telegram:42", isGroup: false },
  owner: { channel: "telegram", userId: "42" },
  createdAt: 0,
  nextRunAt: 10 * MIN,
  runCount: 0,
  failures: 0,
  limits: {},
  ...overrides,
});

describe("stop rules", () => {
  it("takes the job's own rules over the config's, and ends a job endAfterDays after it was made", () => {
    const defaults = { maxRuns: 5, endAfterDays: 1, runTokens: 1000 };
    expect(effectiveLimits(job({ limits: { maxRuns: 2 } }), defaults)).toEqual({
      maxRuns: 2,
      endsAt: 24 * 60 * MIN,
      runTokens: 1000,
    });
    expect(effectiveLimits(job(), {})).toEqual({});
  });

  it("runs a slot and moves on; the last run of N leaves no next; past its end or its N runs the job is over", () => {
    expect(planSlot(job(), {}, 10 * MIN)).toEqual({ kind: "run", nextRunAt: 11 * MIN });
    expect(planSlot(job({ runCount: 1 }), { maxRuns: 2 }, 10 * MIN)).toEqual({ kind: "run", nextRunAt: null });
    expect(planSlot(job({ runCount: 2 }), { maxRuns: 2 }, 10 * MIN)).toMatchObject({ kind: "over" });
    expect(planSlot(job(), { endsAt: 10 * MIN + 30_000 }, 10 * MIN)).toEqual({ kind: "run", nextRunAt: null });
    expect(planSlot(job(), { endsAt: 9 * MIN }, 10 * MIN)).toEqual({ kind: "over", why: "its end date passed" });
    expect(planSlot(job({ schedule: { kind: "at", at: 10 * MIN } }), {}, 10 * MIN)).toEqual({
      kind: "run",
      nextRunAt: null,
    });
    // Late (pincer was down): the next slot counts from now, once.
    expect(planSlot(job(), {}, 30 * MIN + 1)).toEqual({ kind: "run", nextRunAt: 31 * MIN });
  });

  it("stops a run or a day at its token or cost cap, and only there; reads what was spent only for a cap", async () => {
    const spent = (tokens: number, cost: number) => async () => ({ tokens, cost });
    expect(await runCapReached({ runTokens: 100 }, spent(99, 0))).toBeUndefined();
    expect(await runCapReached({ runTokens: 100 }, spent(100, 0))).toBe("this run used 100 tokens, its cap is 100");
    expect(await runCapReached({ runCost: 0.5 }, spent(1e9, 0.5))).toBe("this run cost 0.5000, its cap is 0.5");
    const unread = async () => expect.unreachable("nothing is read without a cap");
    expect(await runCapReached({ dayTokens: 1 }, unread)).toBeUndefined();
    expect(await dayCapReached({ dayTokens: 10 }, spent(10, 0))).toContain("of its 10 tokens for today");
    expect(await dayCapReached({ dayCost: 1 }, spent(0, 0.99))).toBeUndefined();
    expect(await dayCapReached({ runCost: 1 }, unread)).toBeUndefined();
  });

  it("lets only the job's owner or pincer's owner act on it", () => {
    const owned = job();
    expect(mayActOn(owned, { channel: "telegram", userId: "42" }, false)).toBe(true);
    expect(mayActOn(owned, { channel: "telegram", userId: "43" }, false)).toBe(false);
    // The same id on another platform is another person.
    expect(mayActOn(owned, { channel: "discord", userId: "42" }, false)).toBe(false);
    expect(mayActOn(owned, { channel: "telegram", userId: "1" }, true)).toBe(true);
    expect(mayActOn(job({ owner: undefined }), { channel: "telegram", userId: "42" }, false)).toBe(false);
  });
});

describe("stop rules a person types", () => {
  const now = Date.parse("2026-06-01T12:00:00Z");
  it("replaces the rules given, removes those left empty or none, and keeps the others", () => {
    const current = { maxRuns: 5, dayTokens: 1000, runCost: 0.5 };
    const input = { maxRuns: "3", endsAt: "2026-07-01T09:30", dayTokens: "", runCost: "none", dayCost: " 0.25 " };
    const limits = withLimits(current, input, "Europe/Berlin", now);
    expect(limits).toEqual({ maxRuns: 3, endsAt: Date.parse("2026-07-01T07:30:00Z"), dayCost: 0.25 });
    expect(limitsText(limits as object, "Europe/Berlin")).toBe("maxRuns 3, endsAt 2026-07-01T09:30, dayCost 0.25");
    expect(withLimits(current, {}, "UTC", now)).toEqual(current);
  });

  it("refuses what is not a rule, with a sentence naming the field", () => {
    const refused = (input: Record<string, string>) => withLimits({}, input, "UTC", now);
    expect(refused({ maxRuns: "2.5" })).toBe('At most runs must be a whole number above 0 (or none); got "2.5".');
    expect(refused({ runTokens: "-1" })).toBe('Tokens per run must be a whole number above 0 (or none); got "-1".');
    expect(refused({ dayCost: "lots" })).toBe('Cost per day must be a number above 0 (or none); got "lots".');
    expect(refused({ runCost: "Infinity" })).toContain("Cost per run must be a number above 0");
    expect(refused({ endsAt: "next week" })).toBe('Ends at: "next week" is not a date-time such as 2026-12-31T18:00.');
    expect(refused({ endsAt: "2026-05-31T12:00" })).toBe("Ends at: 2026-05-31T12:00 (UTC) is not in the future.");
  });
});
