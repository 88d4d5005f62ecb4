import type pg from "pg";
import { type Fence, FencedOutError } from "../cluster.js";

/** FOR SHARE: a takeover (an update of the lease row) waits until the fenced transaction ends. */
const FENCE_CHECK = "SELECT 1 FROM cluster_leases WHERE name = $1 AND epoch = $2 FOR SHARE";

async function check(client: pg.PoolClient, fence: Fence): Promise<void> {
  const { rowCount } = await client.query(FENCE_CHECK, [fence.name, fence.epoch]);
  if (rowCount !== 1) throw new FencedOutError(fence);
}

/**
 * The engine's pool with every write under `fence`: a single query runs in a transaction that
 * checks the fence first, and a transaction a caller opens (BEGIN on a connection it took) checks
 * it right after BEGIN. So the engine's own classes, built on this pool, make fenced writes
 * without knowing about leases; a stale fence fails the write with FencedOutError and writes nothing.
 */
export function fencedPool(pool: pg.Pool, fence: Fence): pg.Pool {
  const fencedClient = (client: pg.PoolClient): pg.PoolClient =>
    new Proxy(client, {
      get(target, property, receiver) {
        if (property !== "query") return Reflect.get(target, property, receiver);
        return async (sql: string, params?: unknown[]) => {
          const result = await target.query(sql, params);
          if (typeof sql === "string" && /^\s*BEGIN\b/i.test(sql)) await check(target, fence);
          return result;
        };
      },
    });
  const query = async (sql: string, params?: unknown[]) => {
    const client = fencedClient(await pool.connect());
    let broken = false;
    try {
      await client.query("BEGIN");
      const result = await client.query(sql, params);
      await client.query("COMMIT");
      return result;
    } catch (err) {
      await client.query("ROLLBACK").catch(() => {
        broken = true;
      });
      throw err;
    } finally {
      client.release(broken);
    }
  };
  const connect = async () => fencedClient(await pool.connect());
  // Only what the engine's classes use of a pool: query() and connect().
  return { query, connect } as unknown as pg.Pool;
}
