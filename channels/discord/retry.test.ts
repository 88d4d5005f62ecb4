import { describe, expect, it } from "vitest";
import { RetryError, retryWithBackoff } from "./retry.js";

describe("retryWithBackoff", () => {
  const options = { attempts: 4, baseDelayMs: 100, maxDelayMs: 250, isRetryable: () => true };

  it("retries with doubling delays capped at the maximum, and reports the failures", async () => {
    const delays: number[] = [];
    let calls = 0;
    const { value, failures } = await retryWithBackoff(
      async () => {
        calls++;
        if (calls < 4) throw new Error(`boom ${calls}`);
        return "sent";
      },
      { ...options, sleep: async (ms) => void delays.push(ms) },
    );
    expect(value).toBe("sent");
    expect(delays).toEqual([100, 200, 250]);
    expect(failures.map((e) => (e as Error).message)).toEqual(["boom 1", "boom 2", "boom 3"]);
  });

  it("gives up after the last attempt with every failure", async () => {
    const err = await retryWithBackoff(
      async () => {
        throw new Error("down");
      },
      { ...options, sleep: async () => {} },
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RetryError);
    expect((err as RetryError).failures).toHaveLength(4);
    expect((err as RetryError).message).toBe("down");
  });

  it("stops at once on an error that cannot be fixed by retrying", async () => {
    let calls = 0;
    const err = await retryWithBackoff(
      async () => {
        calls++;
        throw new Error("bad request");
      },
      { ...options, isRetryable: () => false, sleep: async () => {} },
    ).catch((e: unknown) => e);
    expect(calls).toBe(1);
    expect((err as RetryError).failures).toHaveLength(1);
  });
});
