import pg from "pg";

/** What runs a query: the pool, or one connection inside a transaction. */
export interface Db {
  query<R extends pg.QueryResultRow = Record<string, unknown>>(
    sql: string,
    params?: unknown[],
  ): Promise<pg.QueryResult<R>>;
}

/** bigint (int8) and count(*) come back as JavaScript numbers: every one here is a time in ms, an id or a count. */
const types = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === pg.types.builtins.INT8 ? Number : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

export function createPool(url: string, options: { max?: number; onError?: (err: Error) => void } = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 10,
    connectionTimeoutMillis: 10_000,
    idleTimeoutMillis: 30_000,
    types,
  });
  // An idle connection cut off by the server (a restart) is only an event here, never a crash.
  pool.on("error", (err) => options.onError?.(err));
  return pool;
}

/** Runs `work` in one transaction on one connection of the pool: all of it commits, or none. */
export async function transaction<T>(pool: pg.Pool, work: (tx: Db) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  try {
    await client.query("BEGIN");
    const result = await work(client);
    await client.query("COMMIT");
    return result;
  } catch (err) {
    // A connection that cannot even roll back is dropped, not handed to the next query.
    await client.query("ROLLBACK").catch(() => {
      broken = true;
    });
    throw err;
  } finally {
    client.release(broken);
  }
}

/** The first row's first column (a count, an id), or undefined. */
export async function scalar<T>(db: Db, sql: string, params: unknown[] = []): Promise<T | undefined> {
  const { rows } = await db.query(sql, params);
  const row = rows[0];
  return row === undefined ? undefined : (Object.values(row)[0] as T);
}
