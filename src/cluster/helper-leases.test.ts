import { describe, expect, it } from "vitest";
import { helperLeaseName, orphanedHelpers } from "./helper-leases.js";

const lease = (runId: string, expiresInMs: number) => ({
  name: helperLeaseName(runId),
  holder: "p",
  epoch: 1,
  expiresInMs,
});

describe("helpers whose process died", () => {
  it("are orphaned only when their lease was missing at two sweeps in a row", () => {
    const first = orphanedHelpers(["h-dead", "h-new", "h-live"], { leases: [lease("h-live", 3000)] }, new Set());
    expect(first.orphaned).toEqual(new Set());
    expect(first.suspects).toEqual(new Set(["h-dead", "h-new"]));
    // h-new's lease was claimed meanwhile; h-dead's expired one still does not count.
    const second = orphanedHelpers(
      ["h-dead", "h-new", "h-live"],
      { leases: [lease("h-live", 3000), lease("h-new", 3000), lease("h-dead", -50)] },
      first.suspects,
    );
    expect(second.orphaned).toEqual(new Set(["h-dead"]));
    expect(second.suspects).toEqual(new Set(["h-dead"]));
  });

  it("forgets a suspect that finished meanwhile", () => {
    expect(orphanedHelpers([], { leases: [] }, new Set(["h-done"]))).toEqual({
      orphaned: new Set(),
      suspects: new Set(),
    });
  });
});
