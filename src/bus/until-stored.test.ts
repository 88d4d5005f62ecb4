import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { failsEveryTime, untilStored } from "./until-stored.js";

const fast = { baseDelayMs: 1, maxDelayMs: 5 };

describe("untilStored", () => {
  it("retries a failing store until it answers, and says how often it failed", async () => {
    const signal = new AbortController().signal;
    let calls = 0;
    const failures: number[] = [];
    let recovered: number | undefined;
    const result = await untilStored(
      async () => {
        if (++calls < 4) throw new Error("the database system is shutting down");
        return "stored";
      },
      { ...fast, signal, onFailure: (_err, n) => failures.push(n), onRecovered: (n) => (recovered = n) },
    );
    expect(result).toBe("stored");
    expect(failures).toEqual([1, 2, 3]);
    expect(recovered).toBe(3);
    // Nothing is left listening on a signal that lives as long as the channel.
    expect(getEventListeners(signal, "abort")).toHaveLength(0);
  });

  it("gives up with an error once the signal aborts, also while the store never answers", async () => {
    const stop = new AbortController();
    const hanging = untilStored(() => new Promise<never>(() => {}), { ...fast, signal: stop.signal });
    stop.abort(new Error("the channel is stopping"));
    await expect(hanging).rejects.toThrow("the channel is stopping");

    const failing = new AbortController();
    let calls = 0;
    const retrying = untilStored(
      async () => {
        calls++;
        throw new Error("connect ECONNREFUSED");
      },
      { baseDelayMs: 50, maxDelayMs: 50, signal: failing.signal },
    );
    while (calls < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    failing.abort(new Error("stopped"));
    await expect(retrying).rejects.toThrow();
    const after = calls;
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(calls).toBe(after);
  });
});

describe("failsEveryTime", () => {
  it("tells the data refused or pincer's own failure from the store being away", () => {
    const withCode = (code: string) => Object.assign(new Error("x"), { code });
    for (const err of [withCode("22021"), withCode("23505"), withCode("42P01"), withCode("SQLITE_TOOBIG")])
      expect(failsEveryTime(err)).toBe(true);
    expect(failsEveryTime(withCode("SQLITE_CONSTRAINT_PRIMARYKEY"))).toBe(true);
    expect(failsEveryTime(new RangeError("Maximum call stack size exceeded"))).toBe(true);
    for (const err of [
      withCode("ECONNREFUSED"),
      withCode("57P01"),
      withCode("08006"),
      withCode("53300"),
      withCode("SQLITE_BUSY"),
      withCode("SQLITE_IOERR_WRITE"),
      new Error("Connection terminated unexpectedly"),
      "a string",
      null,
    ])
      expect(failsEveryTime(err)).toBe(false);
  });

  it("is thrown at once, not retried", async () => {
    let calls = 0;
    const refused = untilStored(
      async () => {
        calls++;
        throw Object.assign(new Error('invalid byte sequence for encoding "UTF8": 0x00'), { code: "22021" });
      },
      { ...fast, signal: new AbortController().signal },
    );
    await expect(refused).rejects.toThrow("0x00");
    expect(calls).toBe(1);
  });
});
