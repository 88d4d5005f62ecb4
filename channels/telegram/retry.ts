import { setTimeout as sleep } from "node:timers/promises";
import type { Api, Transformer } from "grammy";
import { retryDelay } from "../../src/bus/delivery.js";
import { autoRetry, HttpError } from "./library.js";

/** How hard pincer insists when Telegram is slow, flooded or away. Tests shrink the delays. */
export const DEFAULT_RETRY_POLICY = {
  attempts: 5, // attempts after the first for an API call other than a send or a poll (429, 5xx, network)
  baseDelayMs: 1000, // first pause after a 5xx or network error; doubles each time up to maxDelayMs
  maxDelayMs: 30_000,
  maxRetryAfterSeconds: 300, // a 429 asking for a longer wait than this fails the call instead of stalling the chat
};

type RetryPolicy = typeof DEFAULT_RETRY_POLICY;

/** auto-retry honours a 429's `retry_after`; 5xx and network errors are retried with a tunable backoff (auto-retry's
 * starts at 3 s, fixed). Sends are left to the outbox sender, a failing getUpdates to the poll loop. */
export function installRetries(api: Api, policy: RetryPolicy): void {
  const options = { maxRetryAttempts: policy.attempts, maxDelaySeconds: policy.maxRetryAfterSeconds };
  api.config.use(exceptSends(autoRetry({ ...options, rethrowInternalServerErrors: true, rethrowHttpErrors: true })));
  api.config.use(exceptSends(retryTransient(policy)));
}

// A failed send fails at once: waiting here (up to minutes on a 429) would hold up every other chat behind it in the
// channel's sender, which schedules its own retries per message.
const SEND_METHODS = new Set(["sendMessage", "sendPhoto", "sendDocument"]);

function exceptSends(transformer: Transformer): Transformer {
  return (prev, method, payload, signal) =>
    SEND_METHODS.has(method) ? prev(method, payload, signal) : transformer(prev, method, payload, signal);
}

function retryTransient(policy: RetryPolicy): Transformer {
  return async (prev, method, payload, signal) => {
    for (let attempt = 1; ; attempt++) {
      const last = attempt > policy.attempts || method === "getUpdates";
      try {
        const result = await prev(method, payload, signal);
        if (result.ok || result.error_code < 500 || last) return result;
      } catch (err) {
        if (!(err instanceof HttpError) || signal?.aborted || last) throw err;
      }
      // grammy types the signal with its polyfill's type; Node's own signal is what it passes.
      await sleep(retryDelay(attempt, policy), undefined, { signal: signal as AbortSignal | undefined });
    }
  };
}
