import type pg from "pg";
import type { Fence } from "../cluster.js";
import { NOTIFY_INBOX, NOTIFY_OUTBOX } from "../journal.js";
import { type Store, type StoreOptions, storeOn } from "../store.js";
import { createPool, listen, pgSql } from "./db.js";
import { PostgresMemory } from "./memory.js";
import { migrate } from "./schema.js";

/** The store's groups on `pool`, every write fenced under `fence` when given (see pgSql). */
function groupsOn(pool: pg.Pool, options: StoreOptions, fence?: Fence) {
  const sql = pgSql(pool, fence);
  return storeOn(sql, new PostgresMemory(sql), options);
}

/** The clustered engine: every process of the cluster on one PostgreSQL database (PINCER_DATABASE_URL). */
export async function openPostgresStore(url: string, options: StoreOptions = {}): Promise<Store> {
  // Migrations on a connection of their own, with no time limit: rebuilding an index of a big table takes what it takes.
  const migrating = createPool(url, options.onError, { max: 1 });
  await migrate(migrating).finally(() => migrating.end());
  const timeout = options.queryTimeoutMs ?? 30_000;
  // The server ends a slow statement itself (the connection stays usable); the client gives up a moment later on one
  // that never answered (a silent partition): that query fails and its connection is dropped, not handed out again.
  const pool = createPool(url, options.onError, {
    statement_timeout: timeout,
    query_timeout: timeout + 1000,
    keepAlive: true,
    connectionTimeoutMillis: Math.min(10_000, timeout),
  });
  return {
    engine: "postgres",
    ...groupsOn(pool, options),
    watch: (listener) =>
      listen(
        url,
        [NOTIFY_OUTBOX, NOTIFY_INBOX],
        // Whatever a payload says is ignored: any role that may connect can send these.
        (notification) => {
          if (notification?.channel === NOTIFY_OUTBOX) listener({ kind: "outbox" });
          else if (notification?.channel === NOTIFY_INBOX) listener({ kind: "inbox" });
        },
        options.onError,
      ),
    fenced: (fence) => {
      const under = groupsOn(pool, options, fence);
      return { steps: under.steps, turns: under.turns, recordTurnStart: (msg) => under.journal.recordTurnStart(msg) };
    },
    close: () => pool.end(),
  };
}
