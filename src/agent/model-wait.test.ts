import { describe, expect, it } from "vitest";
import { decideWait, type FailedTry } from "./model-wait.js";

const limits = { refusedSeconds: 60, refusedTries: 5, outageHours: 24 };
const hour = 3_600_000;
const at = (t: Partial<FailedTry>): FailedTry => ({
  tries: 1,
  since: 0,
  now: 0,
  away: true,
  retryAt: 2000,
  ...t,
});

describe("decideWait", () => {
  it("keeps a message for hours while the endpoint is away and nothing has answered since", () => {
    expect(decideWait(at({ tries: 40, now: 23 * hour, retryAt: 23 * hour + 30_000 }), limits)).toEqual({
      wait: "outage",
      retryAt: 23 * hour + 30_000,
    });
    // An answer from before this try does not end the outage.
    expect(decideWait(at({ since: 100, now: 5000, answeredAt: 50 }), limits)).toMatchObject({ wait: "outage" });
    expect(decideWait(at({ tries: 400, now: 24 * hour }), limits)).toEqual({ giveUp: "outage", waitedMs: 24 * hour });
  });

  it("gives a message up after a minute or a few tries while the endpoint answers others", () => {
    // Another request was answered while this try ran.
    const answering = { since: 1000, answeredAt: 5000 };
    expect(decideWait(at({ ...answering, now: 6000, retryAt: 8000 }), limits)).toEqual({
      wait: "refused",
      retryAt: 8000,
    });
    // The last try comes at the bound, not a cool-down after it.
    expect(decideWait(at({ ...answering, now: 50_000, retryAt: 90_000 }), limits)).toEqual({
      wait: "refused",
      retryAt: 61_000,
    });
    expect(decideWait(at({ ...answering, now: 61_000 }), limits)).toEqual({ giveUp: "refused", waitedMs: 60_000 });
    expect(decideWait(at({ ...answering, tries: 5, now: 7000 }), limits)).toMatchObject({ giveUp: "refused" });
  });

  it("bounds an endpoint that answers this message with its own error again and again, even alone", () => {
    const failing = { away: false, answeredAt: undefined };
    expect(decideWait(at({ ...failing, tries: 2, now: 4000 }), limits)).toMatchObject({ wait: "refused" });
    expect(decideWait(at({ ...failing, tries: 5, now: 20_000 }), limits)).toMatchObject({ giveUp: "refused" });
  });
});
