import { setTimeout as delay } from "node:timers/promises";
import { ModelError } from "./model-error.js";

export interface CallBounds {
  /** The whole call, every try and the wait between tries included, ends within this. */
  timeoutMs: number;
  /** Tries after the first, for failures that may heal (never for permanent ones). */
  retries: number;
  /** Who is not answering, for the timeout's sentence ("the model", "the transcription endpoint"). */
  who: string;
}

/**
 * Runs `attempt` until it succeeds, fails permanently, runs out of retries or of time. The
 * deadline covers the whole exchange, the body too: an endpoint that sends its headers and then
 * one byte a second is cut off like one that never answers. Each try gets a signal that aborts
 * on the caller's signal or the deadline, and `attempt` maps its failures to ModelError.
 */
export async function boundedCall<T>(
  bounds: CallBounds,
  signal: AbortSignal | undefined,
  attempt: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  // One plain controller per call, not AbortSignal.any: the openai client adds an abort listener
  // to the signal it is given and never removes it, and Node keeps a composite signal that has a
  // listener alive until it aborts — forever, for a call that ended — with everything it holds.
  const call = new AbortController();
  const bounded = call.signal;
  const seconds = Math.round(bounds.timeoutMs / 100) / 10;
  const timer = setTimeout(
    // Not "away": a server busy with a long answer looks the same, and must not be waited on for hours.
    () => call.abort(new ModelError(`${bounds.who} did not answer within ${seconds} s`, false, undefined, false)),
    bounds.timeoutMs,
  );
  const onAbort = () => call.abort(signal?.reason);
  if (signal?.aborted) onAbort();
  else signal?.addEventListener("abort", onAbort, { once: true });
  try {
    for (let tried = 0; ; tried++) {
      try {
        const result = await attempt(bounded);
        // A stream cut by the abort ends quietly in the openai client: what came is no reply.
        bounded.throwIfAborted();
        return result;
      } catch (err) {
        if (bounded.aborted) throw bounded.reason;
        if (tried >= bounds.retries || !(err instanceof ModelError) || err.permanent) throw err;
        await delay(Math.min(4000, 500 * 2 ** tried), undefined, { signal: bounded }).catch(() => {
          throw bounded.reason;
        });
      }
    }
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", onAbort);
  }
}
