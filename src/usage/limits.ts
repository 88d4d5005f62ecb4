import type { Config } from "../config/config.js";
import type { Store } from "../store/store.js";
import type { Periods } from "./periods.js";

/** Config `usage`: what may be spent; a limit not set is no limit. Costs are in the price table's currency. */
export type UsageLimits = Omit<Config["usage"], "prices"> & { personDailyTokens?: number; personMonthlyCost?: number };

/** What was spent in the periods the limits count: tokens today, cost this month, overall and in this chat. */
export type Spent = Awaited<ReturnType<Store["usage"]["spent"]>>;

export type Verdict = { ok: true } | { ok: false; limit: keyof UsageLimits; reason: string; resetsAt: number };

/**
 * Whether a model call may go out now. A limit is reached once what was spent is at or over it (a call already on its
 * way may go past it a little). Of several reached, the one that resets last is named: nothing runs before it resets.
 */
export function mayCall(spent: Spent, limits: UsageLimits, periods: Periods): Verdict {
  const checks: Array<[keyof UsageLimits, number, number, string]> = [
    ["monthlyCost", spent.monthCost, periods.monthEnd, "the monthly cost budget"],
    ["chatMonthlyCost", spent.chatMonthCost, periods.monthEnd, "this chat's monthly cost budget"],
    ["dailyTokens", spent.dayTokens, periods.dayEnd, "the daily token budget"],
    ["chatDailyTokens", spent.chatDayTokens, periods.dayEnd, "this chat's daily token budget"],
    ["personMonthlyCost", spent.personMonthCost, periods.monthEnd, "your monthly cost budget"],
    ["personDailyTokens", spent.personDayTokens, periods.dayEnd, "your daily token budget"],
  ];
  for (const [limit, used, resetsAt, what] of checks) {
    const max = limits[limit];
    if (max !== undefined && used >= max) {
      const amount = limit.endsWith("Cost") ? `${round(used)} of ${max}` : `${used} of ${max} tokens`;
      const key = limit.startsWith("person") ? "your role's usage" : `usage.${limit}`;
      return { ok: false, limit, resetsAt, reason: `${what} is used up (${amount}, ${key})` };
    }
  }
  return { ok: true };
}

function round(cost: number): string {
  return cost.toFixed(cost < 1 ? 4 : 2);
}
