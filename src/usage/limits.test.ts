import { describe, expect, it } from "vitest";
import { formatDay } from "../time-zone.js";
import { mayCall, type Spent } from "./meter.js";
import { periodsAt } from "./periods.js";

const none: Spent = {
  dayTokens: 0,
  monthCost: 0,
  chatDayTokens: 0,
  chatMonthCost: 0,
  personDayTokens: 0,
  personMonthCost: 0,
};
const at = (iso: string) => Date.parse(iso);

describe("budget periods in the configured zone", () => {
  it("starts a day at local midnight: the last millisecond before belongs to the day before", () => {
    const midnight = at("2026-12-01T23:00:00Z"); // 00:00 on 2 December in Berlin
    expect(periodsAt(midnight, "Europe/Berlin")).toEqual({
      dayStart: midnight,
      dayEnd: at("2026-12-02T23:00:00Z"),
      monthStart: at("2026-11-30T23:00:00Z"),
      monthEnd: at("2026-12-31T23:00:00Z"),
    });
    expect(periodsAt(midnight - 1, "Europe/Berlin").dayEnd).toBe(midnight);
    expect(formatDay(midnight - 1, "Europe/Berlin")).toBe("2026-12-01");
    expect(formatDay(midnight, "Europe/Berlin")).toBe("2026-12-02");
    // In UTC the same instant is still the 1st, 23:00.
    expect(periodsAt(midnight, "UTC").dayStart).toBe(at("2026-12-01T00:00:00Z"));
  });

  it("crosses a year, a zone 45 minutes off the hour, and a midnight the change of clocks skips", () => {
    expect(periodsAt(at("2026-12-31T12:00:00Z"), "UTC").monthEnd).toBe(at("2027-01-01T00:00:00Z"));
    // Chatham: UTC+13:45 in summer.
    const chatham = periodsAt(at("2026-12-01T12:00:00Z"), "Pacific/Chatham");
    expect(chatham.dayStart).toBe(at("2026-12-01T10:15:00Z"));
    expect(chatham.dayEnd - chatham.dayStart).toBe(24 * 3600_000);
    // Santiago moves its clocks from 00:00 to 01:00 on 6 September 2026: that day starts at 01:00 (04:00Z) and is 23 hours long.
    const santiago = periodsAt(at("2026-09-06T12:00:00Z"), "America/Santiago");
    expect(santiago.dayStart).toBe(at("2026-09-06T04:00:00Z"));
    expect(santiago.dayEnd - santiago.dayStart).toBe(23 * 3600_000);
  });
});

describe("mayCall", () => {
  const periods = periodsAt(at("2026-12-15T10:00:00Z"), "UTC");

  it("lets every call through without limits, and under them", () => {
    expect(mayCall({ ...none, dayTokens: 1e9, monthCost: 1e6 }, {}, periods)).toEqual({ ok: true });
    expect(mayCall({ ...none, dayTokens: 999 }, { dailyTokens: 1000 }, periods)).toEqual({ ok: true });
  });

  it("refuses at the limit, says which and when it resets", () => {
    expect(mayCall({ ...none, dayTokens: 1000 }, { dailyTokens: 1000 }, periods)).toEqual({
      ok: false,
      limit: "dailyTokens",
      resetsAt: at("2026-12-16T00:00:00Z"),
      reason: "the daily token budget is used up (1000 of 1000 tokens, usage.dailyTokens)",
    });
    // A person's role's budget (roles.NAME.usage) is theirs alone, wherever they write.
    expect(mayCall({ ...none, personDayTokens: 20 }, { personDailyTokens: 20 }, periods)).toMatchObject({
      ok: false,
      reason: "your daily token budget is used up (20 of 20 tokens, your role's usage)",
    });
    const chat = mayCall({ ...none, chatDayTokens: 50 }, { dailyTokens: 1000, chatDailyTokens: 50 }, periods);
    expect(chat).toMatchObject({ ok: false, limit: "chatDailyTokens", resetsAt: periods.dayEnd });
    const cost = mayCall({ ...none, chatMonthCost: 2.5 }, { chatMonthlyCost: 2 }, periods);
    expect(cost).toMatchObject({ ok: false, limit: "chatMonthlyCost", resetsAt: at("2027-01-01T00:00:00Z") });
    expect(cost.ok === false && cost.reason).toBe(
      "this chat's monthly cost budget is used up (2.50 of 2, usage.chatMonthlyCost)",
    );
  });

  it("names the limit that resets last when several are reached", () => {
    const both = mayCall({ ...none, dayTokens: 10, monthCost: 3 }, { dailyTokens: 10, monthlyCost: 3 }, periods);
    expect(both).toMatchObject({ ok: false, limit: "monthlyCost", resetsAt: periods.monthEnd });
  });
});
