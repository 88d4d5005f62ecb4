import type { Config } from "../config/config.js";

/** How long a message may wait for the model before it is given up (config `agent.waitForModel`). */
type WaitLimits = Config["agent"]["waitForModel"];

/** One more failed try: this message's tries so far and when the first began, whether the endpoint is away (not
 * refusing), when it last answered anything (undefined: not since the start), when it is worth asking again. */
export interface FailedTry {
  tries: number;
  since: number;
  now: number;
  away: boolean;
  answeredAt?: number;
  retryAt: number;
}

/**
 * An outage (the endpoint away, and nothing answered since this message's first try) keeps the message for hours: it
 * runs when the model is back. Anything else (the endpoint answers others, or this message with an error, again and
 * again) is about this message: given up after a few tries or about a minute, so its chat moves on.
 */
export function decideWait(
  t: FailedTry,
  limits: WaitLimits,
): { wait: "outage" | "refused"; retryAt: number } | { giveUp: "outage" | "refused"; waitedMs: number } {
  const waitedMs = t.now - t.since;
  if (t.away && (t.answeredAt === undefined || t.answeredAt < t.since)) {
    if (waitedMs >= limits.outageHours * 3_600_000) return { giveUp: "outage", waitedMs };
    return { wait: "outage", retryAt: t.retryAt };
  }
  const lastChance = t.since + limits.refusedSeconds * 1000;
  if (t.tries >= limits.refusedTries || t.now >= lastChance) return { giveUp: "refused", waitedMs };
  return { wait: "refused", retryAt: Math.min(t.retryAt, lastChance) };
}
