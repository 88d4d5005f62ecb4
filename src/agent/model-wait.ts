import { type InboundMessage, replyTarget, silentReplyOf } from "../bus/types.js";
import type { Config } from "../config/config.js";
import type { ModelUnavailableError } from "../llm/resilient.js";
import { failure, giveUpNotice, notice } from "./notices.js";
import type { TurnOutlet } from "./turn-outlet.js";
import type { WorkerDeps } from "./worker-deps.js";

/** A message the model is unavailable for before any tool ran waits (its lane pauses until the time returned) or, past
 * agent.waitForModel's bounds, is given up with one notice through `finish`. A chat hears of an outage once. */
export class ModelWaits {
  /** Chats already told during the current outage (cleared by the first turn that works). */
  private readonly told = new Set<string>();

  constructor(
    private readonly deps: Pick<WorkerDeps, "journal" | "log" | "config">,
    private readonly outlet: Pick<TurnOutlet, "finish" | "aside">,
  ) {}

  answered(): void {
    this.told.clear();
  }

  /** `triedAt`: when this try's turn began. Returns when to run the message again, or undefined when given up. */
  async unavailable(msg: InboundMessage, err: ModelUnavailableError, triedAt: number): Promise<number | undefined> {
    const { deps } = this;
    const target = replyTarget(msg);
    const now = Date.now();
    // Waiting for the model is no crash: this start does not count against the message.
    await deps.journal.forgetTurnStart(msg);
    const { tries, since } = await deps.journal.recordModelWait(msg, triedAt);
    const facts = { tries, since, now, away: err.away, answeredAt: err.answeredAt, retryAt: err.retryAt };
    const decision = decideWait(facts, deps.config.agent.waitForModel);
    const log = { session: msg.sessionKey, err: err.message, tries, waitedMs: now - since };
    if ("giveUp" in decision) {
      deps.log.warn({ ...log, kind: decision.giveUp }, "giving up a message the model is unavailable for");
      // A run that may stay silent (the heartbeat) is given up silently; a reminder says it could not run.
      const text = giveUpNotice(decision.giveUp, err.message, decision.waitedMs, msg.channel === "system");
      await this.outlet.finish(msg, [], silentReplyOf(msg) ? undefined : failure(target, text));
      return undefined;
    }
    deps.log.warn({ ...log, kind: decision.wait, retryAt: decision.retryAt }, "model unavailable; the message waits");
    // Told on the second failed try: a blip says nothing, and by then another chat's answer may have shown the endpoint
    // is there (a refused message's only notice is its give-up). The count is stored: a restart does not tell again.
    const tell = decision.wait === "outage" && tries === 2 && msg.channel !== "system";
    if (tell && !this.told.has(msg.sessionKey)) {
      this.told.add(msg.sessionKey);
      const text = `The model is not answering right now (${err.message}). Your message is kept and I will answer as soon as it is back.`;
      this.outlet.aside(notice(target, text));
    }
    return decision.retryAt;
  }
}

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

/** An outage (the endpoint away, nothing answered since this message's first try) keeps the message for hours, till the
 * model is back; anything else is about this message: given up after a few tries or about a minute. */
export function decideWait(
  t: FailedTry,
  limits: Config["agent"]["waitForModel"],
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
