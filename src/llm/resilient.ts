import { type Model, ModelError } from "./model.js";

type BreakerSettings = { failureThreshold: number; coolDownMs: number };

/** Conversations remembered as failing since the last success; past this, the oldest is forgotten. */
const MAX_FAILING = 1000;

/** One endpoint's circuit: after `failureThreshold` failures in a row it fails fast for `coolDownMs`, then lets one
 * trial request go (half-open): a success closes it, a failure opens it again. A failure the endpoint answered (a 500,
 * too slow) counts once per conversation: one conversation's request refused again and again says something about that
 * request, not that the endpoint fails every chat. Failures that show it away (no connection, 502–504, 429) all count. */
export class CircuitBreaker {
  private failures = 0;
  private openUntil = 0;
  private trialRunning = false;
  /** Conversation → its failures in a row (for its own backoff). */
  private readonly failing = new Map<string, number>();

  constructor(private readonly settings: BreakerSettings) {}

  get isOpen(): boolean {
    return this.failures >= this.settings.failureThreshold;
  }

  /** Whether a request may go out now; in the half-open state only one at a time. */
  tryAcquire(now: number): boolean {
    if (!this.isOpen) return true;
    if (now < this.openUntil || this.trialRunning) return false;
    this.trialRunning = true;
    return true;
  }

  /** The request ended without saying anything about the endpoint's health (aborted, refused as a 4xx). */
  release(): void {
    this.trialRunning = false;
  }

  /** True when this success closed an open circuit. */
  success(): boolean {
    const wasOpen = this.isOpen;
    this.failures = 0;
    this.failing.clear();
    this.trialRunning = false;
    return wasOpen;
  }

  /** True when this failure opened the circuit (from closed). `conversation`: whose request failed; `away`: the
   * endpoint was not there (then it counts whoever asked). */
  failure(now: number, conversation?: string, away = true): boolean {
    const wasOpen = this.isOpen;
    const before = conversation === undefined ? undefined : this.failing.get(conversation);
    if (conversation !== undefined) {
      this.failing.delete(conversation);
      this.failing.set(conversation, (before ?? 0) + 1);
      if (this.failing.size > MAX_FAILING) this.failing.delete(this.failing.keys().next().value as string);
    }
    if (away || before === undefined) this.failures++;
    this.trialRunning = false;
    if (this.isOpen && (!wasOpen || away || before === undefined)) this.openUntil = now + this.settings.coolDownMs;
    return this.isOpen && !wasOpen;
  }

  retryAt(now: number, conversation?: string): number {
    if (this.isOpen) return this.trialRunning ? now + 1000 : Math.max(now, this.openUntil);
    const inARow = Math.max(1, this.failures, (conversation && this.failing.get(conversation)) || 0);
    return now + Math.min(this.settings.coolDownMs, 2000 * inARow);
  }
}

/** Every endpoint failed in a way that may heal, or is open: worth running again at `retryAt`; `away`: they seem gone
 * rather than refusing; `answeredAt`: when one last answered any request (undefined: not since the start). */
export class ModelUnavailableError extends ModelError {
  constructor(
    message: string,
    readonly retryAt: number,
    away = true,
    readonly answeredAt?: number,
  ) {
    super(message, false, undefined, away);
  }
}

/** `breaker`: the endpoint's circuit, shared by every chain that tries the endpoint. */
export type Endpoint = { name: string; model: Model; breaker: CircuitBreaker };

/** Tries the endpoints in order, the next only after a transient failure: a permanent one (a 4xx, a 5xx blaming the
 * request) another model would most likely refuse the same way. An open circuit costs nothing; when all failed or are
 * open, throws ModelUnavailableError. */
export function createResilientModel(
  endpoints: Endpoint[],
  events: {
    onOpen?(endpoint: string, err: unknown): void;
    onClose?(endpoint: string): void;
    /** Each failure of an endpoint, before it is weighed. */
    onError?(endpoint: string, err: unknown): void;
  } = {},
  now: () => number = Date.now,
): Model {
  // Each endpoint's last transient failure: an open circuit fails fast with the reason it opened.
  const lastErrors = new Map<string, ModelError>();
  let answeredAt: number | undefined;
  return {
    async complete(request) {
      let lastError: ModelError | undefined;
      let retryAt = Number.POSITIVE_INFINITY;
      for (const { name, model, breaker } of endpoints) {
        if (!breaker.tryAcquire(now())) {
          retryAt = Math.min(retryAt, breaker.retryAt(now()));
          lastError ??= lastErrors.get(name);
          continue;
        }
        try {
          const reply = await model.complete(request);
          answeredAt = now();
          if (breaker.success()) events.onClose?.(name);
          return reply;
        } catch (err) {
          events.onError?.(name, err);
          // A permanent failure is about the request (the user hears it), not about the endpoint's health.
          if (request.signal?.aborted || !(err instanceof ModelError) || err.permanent) {
            breaker.release();
            throw err;
          }
          if (breaker.failure(now(), request.conversation, err.away)) events.onOpen?.(name, err);
          lastError = err;
          lastErrors.set(name, lastError);
          retryAt = Math.min(retryAt, breaker.retryAt(now(), request.conversation));
        }
      }
      const reason = lastError?.message ?? "the model endpoint is not answering";
      throw new ModelUnavailableError(reason, retryAt, lastError?.away ?? true, answeredAt);
    },
  };
}
