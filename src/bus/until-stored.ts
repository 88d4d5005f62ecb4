import { setTimeout as pause } from "node:timers/promises";
import type { Logger } from "pino";
import { retryDelay } from "./delivery.js";
import { errorText } from "./types.js";

interface UntilStoredOptions {
  /** Ends the retries; the last failure is thrown. */
  signal: AbortSignal;
  onFailure?(err: unknown, failures: number): void;
  onRecovered?(failures: number): void;
  baseDelayMs?: number;
  maxDelayMs?: number;
}

/** Runs a store write that must not be skipped (an arriving message's inbox row, the record that a reply went out)
 * until it works, with capped backoff, until `signal` aborts; then it throws, and the caller acts as if it never
 * happened (a platform is not told the message was taken). A failure that repeats on every try (failsEveryTime) is
 * thrown at once: retried, it would hold up the channel's every other chat for ever. */
export async function untilStored<T>(operation: () => Promise<T>, options: UntilStoredOptions): Promise<T> {
  const timing = { baseDelayMs: options.baseDelayMs ?? 250, maxDelayMs: options.maxDelayMs ?? 5000 };
  for (let failures = 1; ; failures++) {
    options.signal.throwIfAborted();
    try {
      // A call the store never answers (the network paused) is left behind once the signal aborts.
      const result = await untilAborted(operation(), options.signal);
      if (failures > 1) options.onRecovered?.(failures - 1);
      return result;
    } catch (err) {
      if (options.signal.aborted || failsEveryTime(err)) throw err;
      options.onFailure?.(err, failures);
    }
    await pause(retryDelay(failures, timing), undefined, { signal: options.signal });
  }
}

/** Whether retrying cannot help: pincer's own code failing on this input (a RangeError or TypeError), or the database
 * refusing the data (PostgreSQL's classes 22 data exception, 23 constraint, 42 rule: a NUL in a name; SQLite's
 * constraint, size and type errors). Anything else (connections, locks, I/O, shutdown) is the store away. */
export function failsEveryTime(err: unknown): boolean {
  if (err instanceof RangeError || err instanceof TypeError) return true;
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== "string") return false;
  return /^(22|23|42)[0-9A-Z]{3}$/.test(code) || /^SQLITE_(CONSTRAINT|TOOBIG|MISMATCH|RANGE)/.test(code);
}

/** `work`, or its signal's reason once aborted: a call that ignores its signal must not hold anyone past it. */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/** The options a channel uses for an arriving message: the first failure and the recovery are logged. */
export function inboundRetries(log: Pick<Logger, "warn" | "info">, signal: AbortSignal): UntilStoredOptions {
  return {
    signal,
    onFailure: (err, failures) => {
      if (failures > 1) return;
      const msg =
        "could not store an arriving message; it is not confirmed to the platform, retrying until the store answers";
      log.warn({ err: errorText(err) }, msg);
    },
    onRecovered: (failures) => log.info({ failures }, "stored the arriving message after the store came back"),
  };
}
