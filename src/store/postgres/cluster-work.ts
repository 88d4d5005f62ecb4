import pg from "pg";
import type { InboundMessage } from "../../bus/types.js";
import type { ClusterWork } from "../cluster.js";

const CHANNEL = "pincer_work";
const TURN_PREFIX = "turn:";

/**
 * The shared inbox read by clustered mode's dispatcher, and LISTEN/NOTIFY so a process wakes the
 * others instead of every one of them polling fast.
 */
export class PostgresClusterWork implements ClusterWork {
  private readonly pool: pg.Pool;

  constructor(
    private readonly url: string,
    private readonly onError: (err: Error) => void = () => {},
  ) {
    this.pool = new pg.Pool({ connectionString: url, max: 2, connectionTimeoutMillis: 3000, query_timeout: 5000 });
    this.pool.on("error", (err) => onError(err));
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  async freeSessions(limit: number): Promise<string[]> {
    const { rows } = await this.pool.query<{ session_key: string }>(
      `SELECT i.session_key FROM inbox i
       WHERE i.status = 'pending' AND NOT EXISTS (
         SELECT 1 FROM cluster_leases l WHERE l.name = $2 || i.session_key AND l.expires_at > now())
       GROUP BY i.session_key ORDER BY min(i.received_at) LIMIT $1`,
      [limit, TURN_PREFIX],
    );
    return rows.map((row) => row.session_key);
  }

  async pendingOf(sessionKeys: readonly string[]): Promise<InboundMessage[]> {
    if (sessionKeys.length === 0) return [];
    const { rows } = await this.pool.query<{ payload: string | InboundMessage }>(
      `SELECT payload FROM inbox WHERE status = 'pending' AND session_key = ANY($1::text[])
       ORDER BY received_at, seq`,
      [[...sessionKeys]],
    );
    return rows.map((row) =>
      typeof row.payload === "string" ? (JSON.parse(row.payload) as InboundMessage) : row.payload,
    );
  }

  async announce(): Promise<void> {
    await this.pool.query("SELECT pg_notify($1, '')", [CHANNEL]);
  }

  listen(wake: () => void): () => Promise<void> {
    let client: pg.Client | undefined;
    let stopped = false;
    let retry: NodeJS.Timeout | undefined;
    const again = () => {
      if (stopped || retry) return;
      retry = setTimeout(() => {
        retry = undefined;
        void connect();
      }, 1000);
    };
    // A lost connection (the server restarted) reconnects; what was announced meanwhile is found by the pass after it.
    const connect = async () => {
      const next = new pg.Client({ connectionString: this.url, connectionTimeoutMillis: 3000 });
      client = next;
      next.on("error", (err) => this.onError(err));
      next.on("end", () => {
        if (client === next) again();
      });
      next.on("notification", () => wake());
      try {
        await next.connect();
        await next.query(`LISTEN ${CHANNEL}`);
        wake();
      } catch (err) {
        this.onError(err as Error);
        await next.end().catch(() => {});
        again();
      }
    };
    void connect();
    return async () => {
      stopped = true;
      clearTimeout(retry);
      await client?.end().catch(() => {});
    };
  }
}
