import type { InboundMessage } from "../bus/types.js";

/**
 * What clustered mode keeps in the shared database: leases (roles such as a channel connection,
 * and each conversation's turn) and the processes' heartbeats. Only the PostgreSQL engine has it.
 */

/** A lease as its holder knows it: the epoch grows every time the lease changes hands. */
export interface Fence {
  name: string;
  epoch: number;
}

/** One running pincer process, as it registers itself. */
export interface ClusterProcess {
  id: string;
  host: string;
  pid: number;
}

/** The cluster as `pincer status` and the control page show it; ages come from the database's clock. */
export interface ClusterView {
  processes: Array<ClusterProcess & { startedAt: number; heartbeatAgeMs: number }>;
  leases: Array<{ name: string; holder: string; epoch: number; expiresInMs: number }>;
}

/** A write was refused because the lease it was made under changed hands. */
export class FencedOutError extends Error {
  constructor(readonly fence: Fence) {
    super(`the lease "${fence.name}" (epoch ${fence.epoch}) was taken over by another process`);
    this.name = "FencedOutError";
  }
}

/** A connection inside a fenced transaction (the PostgreSQL engine's writes run on it). */
export interface FencedTx {
  query(sql: string, params?: unknown[]): Promise<{ rows: Record<string, unknown>[]; rowCount: number | null }>;
}

export interface ClusterStore {
  /**
   * Takes or keeps each lease in `names` for `holder` for `ttlMs` from the database's now: a
   * lease is taken when it is free or expired, kept when `holder` has it. Returns the epoch of
   * every lease `holder` has afterwards; the others are held by live processes.
   */
  claim(holder: string, names: readonly string[], ttlMs: number): Promise<Map<string, number>>;
  /** Gives leases up at once (an orderly stop), so another process need not wait for them to expire. */
  release(holder: string, names?: readonly string[]): Promise<void>;
  /** Registers the process or records that it is alive now. */
  heartbeat(process: ClusterProcess): Promise<void>;
  /** Removes the process (an orderly stop) with every lease it holds. */
  leave(processId: string): Promise<void>;
  /** Removes processes silent for longer than `ms` (their leases have long expired). */
  forgetSilent(ms: number): Promise<number>;
  view(): Promise<ClusterView>;
  /**
   * Runs `work` in one transaction that commits only while `fence` is still current: the lease
   * row is locked for share first, so no takeover can slip in between the check and the commit.
   * Throws FencedOutError (and writes nothing) when the lease has changed hands.
   */
  fenced<T>(fence: Fence, work: (tx: FencedTx) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** The shared inbox as clustered mode's dispatcher sees it: which conversations wait, and for what. */
export interface ClusterWork {
  /** Conversations with pending inbound messages whose turn lease nobody holds, the longest waiting first. */
  freeSessions(limit: number): Promise<string[]>;
  /** The pending inbound messages of these conversations, oldest first. */
  pendingOf(sessionKeys: readonly string[]): Promise<InboundMessage[]>;
  /** Wakes every process's dispatcher: new work, or a conversation given back. */
  announce(): Promise<void>;
  /** Calls `wake` whenever a process announced work (and after reconnecting); returns how to stop. */
  listen(wake: () => void): () => Promise<void>;
}
