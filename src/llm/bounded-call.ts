import { setTimeout as delay } from "node:timers/promises";
import { ModelError } from "./failure.js";

/** `timeoutMs` covers every try and the waits between; `who` names the silent one in the timeout's sentence. */
type CallBounds = { timeoutMs: number; retries: number; who: string };

/** Runs `attempt` (which maps its failures to ModelError) until it succeeds, fails permanently, or runs out of retries
 * or time. The deadline covers the body too: headers then one byte a second is cut off like silence. */
export async function boundedCall<T>(
  bounds: CallBounds,
  signal: AbortSignal | undefined,
  attempt: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  // One plain controller per call, not AbortSignal.any: the openai client adds an abort listener
  // to the signal it is given and never removes it, and Node keeps a composite signal that has a
  // listener alive until it aborts — forever, for a call that ended — with everything it holds.
  const call = new AbortController();
  const { signal: bounded } = call;
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
