import pg from "pg";
import {
  type ClusterProcess,
  type ClusterStore,
  type ClusterView,
  type Fence,
  FencedOutError,
  type FencedTx,
} from "../cluster.js";
import { type Db, IDLE_IN_TRANSACTION_MS, transaction } from "./db.js";

/**
 * Clustered mode's tables. Epochs come from one sequence, so they never repeat even after a lease
 * row was deleted (a fence from an old epoch can never match a new holder's).
 */
const SCHEMA = `
  CREATE SEQUENCE IF NOT EXISTS cluster_epoch;
  CREATE TABLE IF NOT EXISTS cluster_leases (
    name text PRIMARY KEY,
    holder text NOT NULL,
    epoch bigint NOT NULL,
    acquired_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL
  );
  CREATE INDEX IF NOT EXISTS cluster_leases_holder ON cluster_leases (holder);
  CREATE TABLE IF NOT EXISTS cluster_processes (
    id text PRIMARY KEY,
    host text NOT NULL,
    pid integer NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now()
  );
`;

/** Any number: it only has to be the same in every process, so two starting at once migrate in turn. */
const MIGRATION_LOCK = 7_390_024;

export interface ClusterStoreOptions {
  /** A query that takes longer fails (the database is unreachable): a lease is never renewed late. */
  queryTimeoutMs?: number;
  onError?: (err: Error) => void;
}

/**
 * Opens clustered mode's store on its own small pool: lease renewals never queue behind turns'
 * queries, so a busy process does not lose its roles.
 */
export async function openClusterStore(url: string, options: ClusterStoreOptions = {}): Promise<ClusterStore> {
  const pool = new pg.Pool({
    connectionString: url,
    max: 3,
    connectionTimeoutMillis: options.queryTimeoutMs ?? 3000,
    query_timeout: options.queryTimeoutMs ?? 3000,
    idleTimeoutMillis: 30_000,
    idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_MS,
  });
  // An idle connection cut off by the server (a restart) is only an event here, never a crash.
  pool.on("error", (err) => options.onError?.(err));
  const store = new PostgresClusterStore(pool);
  try {
    await store.migrate();
  } catch (err) {
    await pool.end();
    throw err;
  }
  return store;
}

export class PostgresClusterStore implements ClusterStore {
  constructor(private readonly pool: pg.Pool) {}

  async migrate(): Promise<void> {
    await this.transaction(async (tx) => {
      await tx.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
      await tx.query(SCHEMA);
    });
  }

  async claim(holder: string, names: readonly string[], ttlMs: number): Promise<Map<string, number>> {
    const held = new Map<string, number>();
    if (names.length === 0) return held;
    // Sorted, so two processes claiming overlapping sets lock the rows in the same order.
    const sorted = [...new Set(names)].sort();
    const { rows } = await this.pool.query<{ name: string; epoch: string }>(
      `INSERT INTO cluster_leases AS l (name, holder, epoch, expires_at)
         SELECT name, $2, nextval('cluster_epoch'), now() + $3 * interval '1 millisecond'
         FROM unnest($1::text[]) WITH ORDINALITY AS wanted(name, position) ORDER BY position
       ON CONFLICT (name) DO UPDATE SET
         holder = excluded.holder,
         epoch = CASE WHEN l.holder = excluded.holder THEN l.epoch ELSE excluded.epoch END,
         acquired_at = CASE WHEN l.holder = excluded.holder THEN l.acquired_at ELSE now() END,
         expires_at = excluded.expires_at
       WHERE l.holder = excluded.holder OR l.expires_at <= now()
       RETURNING name, epoch`,
      [sorted, holder, ttlMs],
    );
    for (const row of rows) held.set(row.name, Number(row.epoch));
    return held;
  }

  async release(holder: string, names?: readonly string[]): Promise<void> {
    if (names === undefined) {
      await this.pool.query("DELETE FROM cluster_leases WHERE holder = $1", [holder]);
    } else if (names.length > 0) {
      await this.pool.query("DELETE FROM cluster_leases WHERE holder = $1 AND name = ANY($2::text[])", [
        holder,
        [...names],
      ]);
    }
  }

  async heartbeat(process: ClusterProcess): Promise<void> {
    await this.pool.query(
      `INSERT INTO cluster_processes (id, host, pid) VALUES ($1, $2, $3)
       ON CONFLICT (id) DO UPDATE SET heartbeat_at = now()`,
      [process.id, process.host, process.pid],
    );
  }

  async leave(processId: string): Promise<void> {
    await this.transaction(async (tx) => {
      await tx.query("DELETE FROM cluster_leases WHERE holder = $1", [processId]);
      await tx.query("DELETE FROM cluster_processes WHERE id = $1", [processId]);
    });
  }

  async forgetSilent(ms: number): Promise<number> {
    const { rowCount } = await this.pool.query(
      "DELETE FROM cluster_processes WHERE heartbeat_at < now() - $1 * interval '1 millisecond'",
      [ms],
    );
    return rowCount ?? 0;
  }

  async view(): Promise<ClusterView> {
    const processes = await this.pool.query<{
      id: string;
      host: string;
      pid: number;
      started_at: Date;
      age_ms: string;
    }>(
      `SELECT id, host, pid, started_at, (extract(epoch FROM now() - heartbeat_at) * 1000)::bigint AS age_ms
       FROM cluster_processes ORDER BY started_at, id`,
    );
    const leases = await this.pool.query<{ name: string; holder: string; epoch: string; expires_in_ms: string }>(
      `SELECT name, holder, epoch, (extract(epoch FROM expires_at - now()) * 1000)::bigint AS expires_in_ms
       FROM cluster_leases ORDER BY name`,
    );
    return {
      processes: processes.rows.map((row) => ({
        id: row.id,
        host: row.host,
        pid: row.pid,
        startedAt: row.started_at.getTime(),
        heartbeatAgeMs: Number(row.age_ms),
      })),
      leases: leases.rows.map((row) => ({
        name: row.name,
        holder: row.holder,
        epoch: Number(row.epoch),
        expiresInMs: Number(row.expires_in_ms),
      })),
    };
  }

  fenced<T>(fence: Fence, work: (tx: FencedTx) => Promise<T>): Promise<T> {
    return this.transaction(async (tx) => {
      // FOR SHARE: a takeover (an UPDATE of this row) waits until this transaction ends, and a
      // takeover that committed first changes the epoch, so the row no longer matches.
      const { rowCount } = await tx.query("SELECT 1 FROM cluster_leases WHERE name = $1 AND epoch = $2 FOR SHARE", [
        fence.name,
        fence.epoch,
      ]);
      if (rowCount !== 1) throw new FencedOutError(fence);
      return work(tx);
    });
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  private transaction<T>(work: (tx: Db) => Promise<T>): Promise<T> {
    return transaction(this.pool, work);
  }
}
