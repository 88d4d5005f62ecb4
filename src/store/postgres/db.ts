import pg from "pg";
import { type Fence, FencedOutError } from "../cluster.js";
import type { Sql } from "../sql.js";

/** What runs a query: the pool, or one connection inside a transaction. */
export type Db = Pick<pg.PoolClient, "query">;

/** bigint (int8) and count(*) come back as JavaScript numbers: every one here is a time in ms, an id or a count. */
const types = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === pg.types.builtins.INT8 ? Number : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

/** The server ends sessions idle in a transaction this long: a paused process mid-write would block lease takeovers. */
const IDLE_IN_TRANSACTION_MS = 5000;

/** A pool of pincer's (the store's ten connections unless `config` says otherwise). */
export function createPool(url: string, onError?: (err: Error) => void, config: pg.PoolConfig = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: 10,
    connectionTimeoutMillis: 10_000,
    idleTimeoutMillis: 30_000,
    idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_MS,
    types,
    ...config,
  });
  // An idle connection cut off by the server (a restart) is only an event here, never a crash.
  pool.on("error", (err) => onError?.(err));
  return pool;
}

export async function transaction<T>(pool: pg.Pool, work: (tx: Db) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  // Ended by the server between two statements (IDLE_IN_TRANSACTION_MS, a restart): the next one fails, no crash.
  const ended = () => {
    broken = true;
  };
  client.on("error", ended);
  try {
    await client.query("BEGIN");
    const result = await work(client);
    await client.query("COMMIT");
    return result;
  } catch (err) {
    // A connection that cannot even roll back is dropped, not handed to the next query.
    await client.query("ROLLBACK").catch(ended);
    throw err;
  } finally {
    client.off("error", ended);
    client.release(broken);
  }
}

/** The store's SQL on a pool. Under a `fence` every write is a transaction that first checks the fence, its lease row
 * locked FOR SHARE (a takeover waits for it): the groups write fenced without knowing, a stale fence writes nothing. */
export function pgSql(pool: pg.Pool, fence?: Fence): Sql {
  const begin = <T>(work: (client: Db) => Promise<T>) =>
    transaction(pool, async (client) => {
      const sql = "SELECT 1 FROM cluster_leases WHERE name = $1 AND epoch = $2 FOR SHARE";
      if (fence && (await client.query(sql, [fence.name, fence.epoch])).rowCount !== 1) throw new FencedOutError(fence);
      return work(client);
    });
  const single = fence
    ? ({ query: (sql: string, params?: unknown[]) => begin((c) => c.query(sql, params)) } as Db)
    : pool;
  return { ...on(single), transaction: (work) => begin((client) => work(on(client))) };
}

function on(db: Db): Sql {
  const self: Sql = {
    engine: "postgres",
    seq: "seq",
    async rows<R>(sql: string, params?: readonly unknown[]) {
      return (await db.query(sql, params as unknown[])).rows as R[];
    },
    async run(sql, params) {
      return (await db.query(sql, params as unknown[])).rowCount ?? 0;
    },
    transaction: (work) => work(self),
    async notify(channel) {
      await db.query("SELECT pg_notify($1, '')", [channel]);
    },
    /** Running sums over the rows in `order`: PostgreSQL reads them all, then keeps what fits. */
    async budgeted(select, order, params, budget, minRows = 0) {
      const n = params.length;
      const rows = await self.rows<{ budget_used: unknown; budget_n: unknown }>(
        `SELECT * FROM (
           SELECT t.*, sum(t.tokens) OVER (ORDER BY ${order}) AS budget_used, row_number() OVER (ORDER BY ${order}) AS budget_n
             FROM (${select}) t
         ) b WHERE budget_n <= $${n + 1} OR budget_used <= $${n + 2} ORDER BY ${order}`,
        [...params, minRows, Math.min(budget, Number.MAX_SAFE_INTEGER)],
      );
      // Rows as the caller's R (the interface's): the columns are its select's.
      return rows.map(({ budget_used, budget_n, ...row }) => row) as never;
    },
  };
  return self;
}

/** LISTENs on a connection of its own; calls `heard` with each notification, and with none once (re)connected (a lost
 * connection retries a second later; what was sent meanwhile is for the caller's next look). Resolves with a stop. */
export async function listen(
  url: string,
  channels: readonly string[],
  heard: (notification?: pg.Notification) => void,
  onError: (err: Error) => void = () => {},
): Promise<() => Promise<void>> {
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
  const connect = async () => {
    const next = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
    client = next;
    next.on("error", onError);
    next.on("end", () => {
      if (client === next) again();
    });
    next.on("notification", heard);
    try {
      await next.connect();
      await next.query(channels.map((channel) => `LISTEN ${channel}`).join("; "));
      heard();
    } catch (err) {
      onError(err as Error);
      await next.end().catch(() => {});
      again();
    }
  };
  await connect();
  return async () => {
    stopped = true;
    clearTimeout(retry);
    await client?.end().catch(() => {});
  };
}
