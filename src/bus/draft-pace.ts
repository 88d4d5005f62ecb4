/**
 * How often a draft may change: about once a second in a private chat; every 3 s in a group,
 * where Telegram allows a bot 20 messages a minute and every member sees each edit.
 */
export function draftIntervalMs(isPrivate: boolean): number {
  return isPrivate ? 1000 : 3000;
}

/** The longest a draft waits after failures that gave no retry_after. */
const MAX_BACKOFF_MS = 30_000;

/** When the next call for a draft may go: an interval after the last one, and never while the platform asked to wait. */
export function nextCallAt(lastAt: number | undefined, intervalMs: number, blockedUntil: number): number {
  return Math.max(lastAt === undefined ? 0 : lastAt + intervalMs, blockedUntil);
}

/** How long a draft pauses after its `failures`-th failure in a row: the platform's retry_after, else doubling. */
export function backoffMs(failures: number, intervalMs: number, retryAfterMs?: number): number {
  if (retryAfterMs !== undefined) return retryAfterMs;
  return Math.min(MAX_BACKOFF_MS, intervalMs * 2 ** Math.max(0, failures - 1));
}

/** The one platform call a draft needs next to show `parts`, given what its messages show. */
export type DraftStep = { kind: "edit"; index: number } | { kind: "send"; index: number };

/**
 * One call at a time, so the pace holds: the last message catches up with its part first (once
 * the text has moved past it, that completes it), then the next part is posted as a new message.
 * Messages before the last are full and stay as they are until the reply itself edits them.
 */
export function nextDraftStep(shown: readonly string[], parts: readonly string[]): DraftStep | undefined {
  const last = shown.length - 1;
  if (last >= 0 && last < parts.length && parts[last] !== shown[last]) return { kind: "edit", index: last };
  if (parts.length > shown.length) return { kind: "send", index: shown.length };
  return undefined;
}
