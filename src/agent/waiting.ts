/** How long a message may wait for the model before it is given up (config `agent.waitForModel`). */
export interface WaitLimits {
  /** While the endpoint answers other requests, or answers this one with an error of its own. */
  refusedSeconds: number;
  refusedTries: number;
  /** While the endpoint is away: no connection or a gateway status, and nothing else answered. */
  outageHours: number;
}

/** One more try of a message that found the model unavailable. */
export interface FailedTry {
  /** This message's failed tries, this one included, and when the first of them began (epoch ms). */
  tries: number;
  since: number;
  now: number;
  /** The failure says the endpoint is not there, rather than that it refused. */
  away: boolean;
  /** When the endpoint last answered any request (undefined: not since pincer started). */
  answeredAt?: number;
  /** When the endpoint is worth asking again. */
  retryAt: number;
}

export type WaitDecision =
  | { wait: "outage" | "refused"; retryAt: number }
  | { giveUp: "outage" | "refused"; waitedMs: number };

/**
 * An outage (the endpoint away, and no request answered since this message's first try began)
 * keeps the message for hours: it runs when the model is back. Anything else (the endpoint answers others,
 * or answers this message with an error of its own, again and again) is about this message:
 * it is given up after a few tries or about a minute, so its chat moves on.
 */
export function decideWait(t: FailedTry, limits: WaitLimits): WaitDecision {
  const waitedMs = t.now - t.since;
  const outage = t.away && (t.answeredAt === undefined || t.answeredAt < t.since);
  if (outage) {
    if (waitedMs >= limits.outageHours * 3_600_000) return { giveUp: "outage", waitedMs };
    return { wait: "outage", retryAt: t.retryAt };
  }
  const lastChance = t.since + limits.refusedSeconds * 1000;
  if (t.tries >= limits.refusedTries || t.now >= lastChance) return { giveUp: "refused", waitedMs };
  return { wait: "refused", retryAt: Math.min(t.retryAt, lastChance) };
}
