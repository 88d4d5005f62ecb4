import type pg from "pg";
import type { ClusterProcess, ClusterView } from "../cluster.js";
import { createPool, transaction } from "./db.js";

/** Epochs come from one sequence, never repeating after a lease row was deleted: an old fence never matches. */
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

/** Opens clustered mode's store on its own small pool, so lease renewals never queue behind turns' queries and a busy
 * process keeps its roles. A query slower than `queryTimeoutMs` fails (database unreachable): no lease renewed late. */
export async function openClusterStore(
  url: string,
  options: { queryTimeoutMs?: number; onError?: (err: Error) => void } = {},
): Promise<ClusterStore> {
  const timeout = options.queryTimeoutMs ?? 3000;
  const pool = createPool(url, options.onError, { max: 3, connectionTimeoutMillis: timeout, query_timeout: timeout });
  await transaction(pool, async (tx) => {
    await tx.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
    await tx.query(SCHEMA);
  }).catch(async (err: unknown) => {
    await pool.end();
    throw err;
  });
  return new ClusterStore(pool);
}

/** What clustered mode keeps in the shared database: leases and the processes' heartbeats. */
export class ClusterStore {
  constructor(private readonly pool: pg.Pool) {}

  /** Takes (free or expired) or keeps (held by `holder`) each lease in `names` for `ttlMs` from the database's now.
   * Returns the epoch of every lease `holder` has afterwards; the others are held by live processes. */
  async claim(holder: string, names: readonly string[], ttlMs: number): Promise<Map<string, number>> {
    if (names.length === 0) return new Map();
    // Sorted, so two processes claiming overlapping sets lock the rows in the same order.
    const sorted = [...new Set(names)].sort();
    const { rows } = await this.pool.query<{ name: string; epoch: number }>(
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
    return new Map(rows.map((row) => [row.name, row.epoch]));
  }

  /** Gives leases up at once (an orderly stop), so another process need not wait for them to expire. */
  async release(holder: string, names?: readonly string[]): Promise<void> {
    if (names?.length === 0) return;
    const release = "DELETE FROM cluster_leases WHERE holder = $1 AND ($2::text[] IS NULL OR name = ANY($2))";
    await this.pool.query(release, [holder, names ? [...names] : null]);
  }

  async heartbeat(process: ClusterProcess): Promise<void> {
    await this.pool.query(
      `INSERT INTO cluster_processes (id, host, pid) VALUES ($1, $2, $3)
       ON CONFLICT (id) DO UPDATE SET heartbeat_at = now()`,
      [process.id, process.host, process.pid],
    );
  }

  async leave(processId: string): Promise<void> {
    await transaction(this.pool, async (tx) => {
      await tx.query("DELETE FROM cluster_leases WHERE holder = $1", [processId]);
      await tx.query("DELETE FROM cluster_processes WHERE id = $1", [processId]);
    });
  }

  /** Removes processes silent for longer than `ms` (their leases have long expired). */
  async forgetSilent(ms: number): Promise<number> {
    const { rowCount } = await this.pool.query(
      "DELETE FROM cluster_processes WHERE heartbeat_at < now() - $1 * interval '1 millisecond'",
      [ms],
    );
    return rowCount ?? 0;
  }

  async view(): Promise<ClusterView> {
    const processes = await this.pool.query<ClusterView["processes"][number]>(
      `SELECT id, host, pid, (extract(epoch FROM started_at) * 1000)::bigint AS "startedAt",
              (extract(epoch FROM now() - heartbeat_at) * 1000)::bigint AS "heartbeatAgeMs"
       FROM cluster_processes ORDER BY started_at, id`,
    );
    const leases = await this.pool.query<ClusterView["leases"][number]>(
      `SELECT name, holder, epoch, (extract(epoch FROM expires_at - now()) * 1000)::bigint AS "expiresInMs"
       FROM cluster_leases ORDER BY name`,
    );
    return { processes: processes.rows, leases: leases.rows };
  }

  close = () => this.pool.end();
}
