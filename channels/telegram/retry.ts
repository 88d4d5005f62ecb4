import { setTimeout as sleep } from "node:timers/promises";
import type { Api, Transformer } from "grammy";
import type { Logger } from "pino";
import { autoRetry, HttpError } from "./library.js";

/** How hard pincer insists when Telegram is slow, flooded or away. Tests shrink the delays. */
export interface RetryPolicy {
  /** Attempts after the first for an API call other than a send (429, 5xx, network). */
  attempts: number;
  /** First pause after a 5xx or network error; doubles each time up to maxDelayMs. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** A 429 asking for a longer wait than this fails the call instead of stalling the chat. */
  maxRetryAfterSeconds: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  attempts: 5,
  baseDelayMs: 1000,
  maxDelayMs: 30_000,
  maxRetryAfterSeconds: 300,
};

/** The pause before attempt `n` (0-based) of an exponential backoff, capped. */
export function backoffDelay(n: number, baseMs: number, maxMs: number): number {
  return Math.min(maxMs, baseMs * 2 ** n);
}

/**
 * The retry layers: auto-retry honours 429 `retry_after`; 5xx and network errors are retried with
 * a tunable backoff (auto-retry's starts at 3 s, fixed); getUpdates is retried forever, its outage
 * logged once when it starts and once when it ends.
 */
export function installRetries(api: Api, policy: RetryPolicy, log: Logger): void {
  api.config.use(
    exceptSends(
      autoRetry({
        maxRetryAttempts: policy.attempts,
        maxDelaySeconds: policy.maxRetryAfterSeconds,
        rethrowInternalServerErrors: true,
        rethrowHttpErrors: true,
      }),
    ),
  );
  api.config.use(exceptSends(retryTransient(policy)));
  api.config.use(keepPolling(policy, log));
}

/** Methods that deliver a message: the outbox sender retries them, with backoff and retry_after, outside any turn. */
const SEND_METHODS = new Set(["sendMessage", "sendPhoto", "sendDocument"]);

/**
 * A failed send fails at once: waiting here (up to minutes on a 429) would hold up every other
 * chat behind it in the channel's sender, which schedules its own retries per message.
 */
function exceptSends(transformer: Transformer): Transformer {
  return (prev, method, payload, signal) =>
    SEND_METHODS.has(method) ? prev(method, payload, signal) : transformer(prev, method, payload, signal);
}

function retryTransient(policy: RetryPolicy): Transformer {
  return async (prev, method, payload, signal) => {
    for (let attempt = 0; ; attempt++) {
      const last = attempt >= policy.attempts || method === "getUpdates";
      try {
        const result = await prev(method, payload, signal);
        if (result.ok || result.error_code < 500 || last) return result;
      } catch (err) {
        if (!(err instanceof HttpError) || signal?.aborted || last) throw err;
      }
      await pause(backoffDelay(attempt, policy.baseDelayMs, policy.maxDelayMs), signal);
    }
  };
}

function keepPolling(policy: RetryPolicy, log: Logger): Transformer {
  let failingSince: number | undefined;
  let failures = 0;
  return async (prev, method, payload, signal) => {
    if (method !== "getUpdates") return prev(method, payload, signal);
    for (;;) {
      let problem: string;
      let wait: number;
      try {
        const result = await prev(method, payload, signal);
        // 401 and 404 mean the token is wrong: no amount of waiting fixes that, the poll loop reports it.
        if (result.ok || result.error_code === 401 || result.error_code === 404) {
          if (result.ok && failingSince !== undefined) {
            log.info({ failures, downMs: Date.now() - failingSince }, "telegram polling recovered");
            failingSince = undefined;
            failures = 0;
          }
          return result;
        }
        problem = `${result.error_code} ${result.description}`;
        const retryAfter = result.parameters?.retry_after;
        wait = retryAfter ? retryAfter * 1000 : backoffDelay(failures, policy.baseDelayMs, policy.maxDelayMs);
      } catch (err) {
        if (signal?.aborted || !(err instanceof HttpError)) throw err;
        problem = err.message;
        wait = backoffDelay(failures, policy.baseDelayMs, policy.maxDelayMs);
      }
      if (failingSince === undefined) {
        failingSince = Date.now();
        log.warn({ problem }, "telegram polling failed; retrying with backoff until it works again");
      }
      failures++;
      await pause(wait, signal);
    }
  };
}

/** A pause cut short (rejecting) when the call is aborted; grammy types the signal with its polyfill's type. */
const pause = (ms: number, signal?: Parameters<Transformer>[3]) =>
  sleep(ms, undefined, { signal: signal as AbortSignal | undefined });
