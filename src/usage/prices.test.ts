import { describe, expect, it } from "vitest";
import { costOf } from "./meter.js";

describe("costOf", () => {
  const counted = { promptTokens: 1_000_000, completionTokens: 500_000, cachedTokens: 400_000 };

  it("prices a million tokens as the table says, cached prompt tokens at their own price", () => {
    expect(costOf(counted, { prompt: 1, completion: 4, cached: 0.5 })).toBeCloseTo(0.6 + 0.2 + 2);
    // Without a cached price, cached tokens cost what other prompt tokens do.
    expect(costOf(counted, { prompt: 1, completion: 4 })).toBeCloseTo(1 + 2);
    expect(costOf(counted, { prompt: 0, completion: 0 })).toBe(0);
  });

  it("is unknown, not free, for a model without a price", () => {
    expect(costOf(counted, undefined)).toBeUndefined();
  });
});
