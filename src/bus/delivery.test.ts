import { describe, expect, it } from "vitest";
import { retryDelay } from "./delivery.js";

const timing = { baseDelayMs: 1000, maxDelayMs: 30_000 };

describe("retryDelay", () => {
  it("doubles per failure, capped, jittered within the upper half", () => {
    expect([1, 2, 3, 4, 5, 6, 10].map((n) => retryDelay(n, timing, undefined, () => 1))).toEqual([
      1000, 2000, 4000, 8000, 16000, 30000, 30000,
    ]);
    expect([1, 2, 6].map((n) => retryDelay(n, timing, undefined, () => 0))).toEqual([500, 1000, 15000]);
  });

  it("honours the platform's retry_after exactly", () => {
    expect(retryDelay(7, timing, 42_000, () => 0.5)).toBe(42_000);
    expect(retryDelay(1, timing, 0)).toBe(0);
  });
});
