import type { Config } from "../config/config.js";
import type { UsageEntry } from "../store/usage.js";

/** Config `usage.prices`: what a million tokens of a model cost; cached ones, when unpriced, cost as prompt ones. */
type Price = Config["usage"]["prices"][string];

/** A call's tokens (the cached ones are part of the prompt ones). */
export type Counted = Pick<UsageEntry, "promptTokens" | "completionTokens" | "cachedTokens">;

/** What a call cost at `price`; undefined without a price (cost unknown, never taken as free). */
export function costOf(counted: Counted, price: Price | undefined): number | undefined {
  if (!price) return undefined;
  const cached = price.cached === undefined ? 0 : counted.cachedTokens;
  const prompt = (counted.promptTokens - cached) * price.prompt + cached * (price.cached ?? 0);
  return (prompt + counted.completionTokens * price.completion) / 1_000_000;
}
