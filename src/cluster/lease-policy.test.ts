import { describe, expect, it } from "vitest";
import { afterClaim, afterSilence, holds, leaseTiming, NOT_HELD } from "./lease-policy.js";

const timing = leaseTiming(10_000); // renew every 2 s, stop 2 s before the lease can be taken

describe("lease timing", () => {
  it("renews several times per lease and refuses leases too short to renew", () => {
    expect(timing).toEqual({ ttlMs: 10_000, renewEveryMs: 2000, marginMs: 2000 });
    expect(timing.renewEveryMs * 3).toBeLessThan(timing.ttlMs - timing.marginMs + 1);
    expect(() => leaseTiming(500)).toThrow(/at least 1000 ms/);
    expect(() => leaseTiming(Number.NaN)).toThrow();
  });
});

describe("a claim's answer", () => {
  it("gains a free lease, valid until the ttl less the margin counted from when the claim left", () => {
    const { state, change } = afterClaim(NOT_HELD, 7, 1000, 1100, timing);
    expect(change).toBe("gained");
    expect(state).toEqual({ epoch: 7, validUntil: 1000 + 10_000 - 2000 });
    expect(holds(state, 8999)).toBe(true);
    expect(holds(state, 9000)).toBe(false);
  });

  it("keeps a lease renewed under the same epoch and extends it", () => {
    const held = { epoch: 7, validUntil: 9000 };
    expect(afterClaim(held, 7, 3000, 3050, timing)).toEqual({
      state: { epoch: 7, validUntil: 11_000 },
      change: "kept",
    });
  });

  it("loses a lease another process has now", () => {
    expect(afterClaim({ epoch: 7, validUntil: 9000 }, undefined, 3000, 3050, timing)).toEqual({
      state: NOT_HELD,
      change: "lost",
    });
    expect(afterClaim(NOT_HELD, undefined, 3000, 3050, timing).change).toBe("none");
  });

  it("reports a new epoch as the lease changing hands, so work under the old one stops", () => {
    expect(afterClaim({ epoch: 7, validUntil: 9000 }, 12, 3000, 3050, timing).change).toBe("changed hands");
  });

  it("gains nothing from an answer that came back too late to count on (a paused or slow process)", () => {
    // The claim left at 1000 and the answer arrived 9 s later: the lease may be taken at any moment.
    expect(afterClaim(NOT_HELD, 7, 1000, 9000, timing)).toEqual({ state: NOT_HELD, change: "none" });
    expect(afterClaim({ epoch: 7, validUntil: 9500 }, 7, 1000, 9000, timing).change).toBe("lost");
  });

  it("does not count a lease that ran out before the answer as held before it", () => {
    // Held until 9000, paused past it, then a claim that left at 20 000 answers: newly gained.
    expect(afterClaim({ epoch: 7, validUntil: 9000 }, 7, 20_000, 20_010, timing).change).toBe("gained");
  });
});

describe("silence", () => {
  it("keeps a lease until its validity ends, then loses it", () => {
    const held = { epoch: 3, validUntil: 9000 };
    expect(afterSilence(held, 8999)).toEqual({ state: held, change: "none" });
    expect(afterSilence(held, 9000)).toEqual({ state: NOT_HELD, change: "lost" });
    expect(afterSilence(NOT_HELD, 50_000).change).toBe("none");
  });
});
