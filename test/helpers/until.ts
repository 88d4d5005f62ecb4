type Falsy = undefined | null | false;

/**
 * Polls `check` (sync or async) every 25 ms until it gives something truthy, and returns that;
 * after `ms` it throws "timed out waiting for <what>", followed by `detail()` (say, the output of
 * the process being waited on). Tests wait on this deadline, never on a fixed sleep; where the
 * deadline itself is the claim ("gone within 3 s"), pass it as `ms`.
 */
export async function until<T>(
  check: () => T | Falsy | Promise<T | Falsy>,
  what: string,
  ms = 15_000,
  detail?: () => string,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value as T;
    if (Date.now() > deadline) {
      const more = detail?.();
      throw new Error(`timed out waiting for ${what}${more ? `\n${more}` : ""}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
