/** When a process may act on a lease, and when it renews, tries again or gives up. Pure: times are this process's
 * monotonic clock in ms; the database times the lease by its own. A claim sent at `sentAt` made the database set the
 * lease to expire `ttlMs` after its own now, later than `sentAt`, so counting from `sentAt` never outlives the real
 * lease. The holder stops `marginMs` earlier still, room for an action it checked just before the end. */

export interface LeaseTiming {
  /** How long a lease lasts in the database after each claim: a dead holder's lease is free after it. */
  ttlMs: number;
  /** How often held leases are renewed and wanted ones tried. */
  renewEveryMs: number;
  /** How long before the lease could be taken over the holder stops acting on it. */
  marginMs: number;
}

export function leaseTiming(ttlMs: number): LeaseTiming {
  if (!Number.isFinite(ttlMs) || ttlMs < 1000) throw new Error(`a lease must last at least 1000 ms, not ${ttlMs}`);
  // Three renewals fit in the lease before the margin: one slow or lost round trip loses nothing.
  return { ttlMs, renewEveryMs: Math.round(ttlMs / 5), marginMs: Math.round(ttlMs / 5) };
}

/** What this process knows of one lease it wants. */
export interface LeaseState {
  /** Set while this process holds the lease and may act on it (until `validUntil`). */
  epoch?: number;
  validUntil: number;
}

export const NOT_HELD: LeaseState = { validUntil: 0 };

/** What a claim's answer (or the passing of time) changed for this process. */
export type LeaseChange = "gained" | "kept" | "lost" | "changed hands" | "none";

export function holds(state: LeaseState, now: number): boolean {
  return state.epoch !== undefined && now < state.validUntil;
}

/** Applies a claim's answer: `epoch` is the lease's epoch when this process has it now, undefined when another does. An
 * answer that came back too late to count on gains nothing. */
export function afterClaim(
  state: LeaseState,
  epoch: number | undefined,
  sentAt: number,
  now: number,
  timing: LeaseTiming,
): { state: LeaseState; change: LeaseChange } {
  const wasHeld = holds(state, now);
  const validUntil = sentAt + timing.ttlMs - timing.marginMs;
  if (epoch === undefined || validUntil <= now) return { state: NOT_HELD, change: wasHeld ? "lost" : "none" };
  const next = { epoch, validUntil };
  if (!wasHeld) return { state: next, change: "gained" };
  // Lost and taken back between two claims (this process was paused): what ran under the old epoch is over.
  return { state: next, change: epoch === state.epoch ? "kept" : "changed hands" };
}

/** Time passed with no renewal that answered (the database is slow or down, or we were paused). */
export function afterSilence(state: LeaseState, now: number): { state: LeaseState; change: LeaseChange } {
  if (state.epoch === undefined || now < state.validUntil) return { state, change: "none" };
  return { state: NOT_HELD, change: "lost" };
}
