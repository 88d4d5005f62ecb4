import type pg from "pg";
import { type Fence, FencedOutError } from "../cluster.js";
import { transaction } from "./db.js";

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
  const connect = async () => fencedClient(await pool.connect());
  // A single query is a transaction of its own, so it checks the fence too.
  const query = (sql: string, params?: unknown[]) =>
    transaction({ connect } as pg.Pool, (client) => client.query(sql, params));
  // Only what the engine's classes use of a pool: query() and connect().
  return { query, connect } as unknown as pg.Pool;
}
