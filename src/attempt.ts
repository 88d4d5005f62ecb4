/** `fn()`, or `fallback` when it throws: for probes whose failure is itself the answer (no such file, not JSON). */
export function attempt<T, F = undefined>(fn: () => T, fallback?: F): T | F {
  try {
    return fn();
  } catch {
    return fallback as F;
  }
}
