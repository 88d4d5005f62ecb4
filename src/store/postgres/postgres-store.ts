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
  const pool = createPool(url, options.onError);
  try {
    await migrate(pool);
  } catch (err) {
    await pool.end();
    throw err;
  }
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
