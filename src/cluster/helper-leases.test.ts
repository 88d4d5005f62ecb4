import { describe, expect, it } from "vitest";
import { FencedOutError } from "../store/cluster.js";
import { guardHelper, helperLeaseName, orphanedHelpers } from "./helper-leases.js";
import type { LeaseHandlers } from "./member.js";

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

describe("a helper's guard", () => {
  /** A member whose one lease the test gains, loses and lets run out by hand. */
  function member() {
    let handlers: LeaseHandlers | undefined;
    let valid = false;
    return {
      want: (_: string, h: LeaseHandlers) => {
        handlers = h;
      },
      fence: (name: string) => (valid ? { name, epoch: 7 } : undefined),
      gain: () => {
        valid = true;
        handlers?.gained({ name: "helper:h-1", epoch: 7 });
      },
      lose: () => {
        valid = false;
        handlers?.lost({ name: "helper:h-1", epoch: 7 });
      },
      runOut: () => {
        valid = false;
      },
    };
  }

  it("waits for the lease at first, lets steps through while it is held, and fences for good once it is lost", async () => {
    const m = member();
    const lost: FencedOutError[] = [];
    const guard = guardHelper(m, "h-1", (err) => lost.push(err), 10_000);
    const first = guard.check();
    m.gain();
    await first;
    await guard.check();
    m.lose();
    await expect(guard.check()).rejects.toBeInstanceOf(FencedOutError);
    m.gain(); // the same process claims the expired lease again: the helper stays stopped
    await expect(guard.check()).rejects.toBeInstanceOf(FencedOutError);
    expect(lost).toHaveLength(1);
  });

  it("fences a process woken from a pause before its next renewal tells it, and a lease that never came", async () => {
    const m = member();
    const lost: FencedOutError[] = [];
    const guard = guardHelper(m, "h-1", (err) => lost.push(err), 10_000);
    m.gain();
    m.runOut();
    await expect(guard.check()).rejects.toBeInstanceOf(FencedOutError);
    expect(lost).toHaveLength(1);
    const never = guardHelper(member(), "h-2", () => {}, 50);
    await expect(never.check()).rejects.toBeInstanceOf(FencedOutError);
  });
});
