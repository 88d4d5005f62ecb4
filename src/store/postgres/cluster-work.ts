import type pg from "pg";
import { inboundFromStored } from "../../bus/stored-inbound.js";
import type { InboundMessage } from "../../bus/types.js";
import { createPool, listen } from "./db.js";

const CHANNEL = "pincer_work";

/** The shared inbox as the cluster's dispatcher sees it; LISTEN/NOTIFY wakes other processes, so none polls fast. */
export class ClusterWork {
  private readonly pool: pg.Pool;

  constructor(
    private readonly url: string,
    private readonly onError: (err: Error) => void = () => {},
  ) {
    this.pool = createPool(url, onError, { max: 2, connectionTimeoutMillis: 3000, query_timeout: 5000 });
  }

  close = () => this.pool.end();

  /** Conversations with pending inbound messages whose turn lease nobody holds, the longest waiting first. */
  async freeSessions(limit: number): Promise<string[]> {
    const { rows } = await this.pool.query<{ session_key: string }>(
      `SELECT i.session_key FROM inbox i
       WHERE i.status = 'pending' AND NOT EXISTS (
         SELECT 1 FROM cluster_leases l WHERE l.name = 'turn:' || i.session_key AND l.expires_at > now())
       GROUP BY i.session_key ORDER BY min(i.received_at) LIMIT $1`,
      [limit],
    );
    return rows.map((row) => row.session_key);
  }

  async pendingOf(sessionKeys: readonly string[]): Promise<InboundMessage[]> {
    if (sessionKeys.length === 0) return [];
    const { rows } = await this.pool.query<{ payload: string }>(
      "SELECT payload FROM inbox WHERE status = 'pending' AND session_key = ANY($1::text[]) ORDER BY received_at, seq",
      [[...sessionKeys]],
    );
    return rows.map((row) => inboundFromStored(row.payload));
  }

  /** Wakes every process's dispatcher: new work, or a conversation given back. */
  async announce(): Promise<void> {
    await this.pool.query("SELECT pg_notify($1, '')", [CHANNEL]);
  }

  /** Calls `wake` whenever a process announced work (and after reconnecting); returns how to stop. */
  listen(wake: () => void): () => Promise<void> {
    const stop = listen(this.url, [CHANNEL], () => wake(), this.onError);
    return async () => (await stop)();
  }
}
