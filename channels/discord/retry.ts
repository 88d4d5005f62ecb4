export interface RetryOptions {
  /** Attempts in all, the first included. */
  attempts: number;
  /** Delay before the second attempt; each further one doubles, up to `maxDelayMs`. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** False for errors that another attempt cannot fix (a bad request, a missing channel). */
  isRetryable: (err: unknown) => boolean;
  sleep?: (ms: number) => Promise<void>;
}

/** Runs `fn` until it succeeds, with exponential backoff; returns the result and the failures seen on the way. */
export async function retryWithBackoff<T>(
  fn: () => Promise<T>,
  options: RetryOptions,
): Promise<{ value: T; failures: unknown[] }> {
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const failures: unknown[] = [];
  for (let attempt = 1; ; attempt++) {
    try {
      return { value: await fn(), failures };
    } catch (err) {
      failures.push(err);
      if (attempt >= options.attempts || !options.isRetryable(err)) throw new RetryError(failures);
      await sleep(Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** (attempt - 1)));
    }
  }
}

/** Every failure of a call that never succeeded; the message is the last one's. */
export class RetryError extends Error {
  constructor(readonly failures: unknown[]) {
    const last = failures.at(-1);
    super(last instanceof Error ? last.message : String(last), { cause: last });
    this.name = "RetryError";
  }
}
