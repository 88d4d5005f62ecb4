import pg from "pg";
import { NOTIFY_INBOX, NOTIFY_OUTBOX } from "../journal.js";
import type { Store, StoreChange, StoreOptions } from "../store.js";
import { storeOn } from "../store-on.js";
import { createPool, pgSql } from "./db.js";
import { fencedPool } from "./fenced-pool.js";
import { PostgresMemory } from "./memory.js";
import { migrate } from "./schema.js";

/**
 * The store's groups on `pool`: the engine's own pool, or one that fences every write under a
 * turn lease (see fenced-pool.ts), so a process that lost its lease cannot write through them.
 */
function groupsOn(pool: pg.Pool, options: StoreOptions) {
  const sql = pgSql(pool);
  return storeOn(sql, new PostgresMemory(sql), options);
}

/** After a lost LISTEN connection, the next try comes this soon. */
const RELISTEN_MS = 1000;

/** The clustered engine: every process of the cluster on one PostgreSQL database (PINCER_DATABASE_URL). */
export async function openPostgresStore(url: string, options: StoreOptions = {}): Promise<Store> {
  const pool = createPool(url, { onError: options.onError });
  try {
    const client = await pool.connect();
    try {
      await migrate(client);
    } finally {
      client.release();
    }
  } catch (err) {
    await pool.end();
    throw err;
  }
  return {
    engine: "postgres",
    ...groupsOn(pool, options),
    watch: (listener) => watch(url, listener, options.onError),
    // The same classes on a pool whose every write checks the turn lease's fence first.
    fenced: (fence) => {
      const under = groupsOn(fencedPool(pool, fence), options);
      return { steps: under.steps, turns: under.turns, recordTurnStart: (msg) => under.journal.recordTurnStart(msg) };
    },
    close: () => pool.end(),
  };
}

/** LISTENs on a connection of its own (a pooled one would be handed to queries); reconnects when it is lost. */
async function watch(
  url: string,
  listener: (change: StoreChange) => void,
  onError?: (err: Error) => void,
): Promise<() => Promise<void>> {
  let client: pg.Client | undefined;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  const connect = async () => {
    const next = new pg.Client({ connectionString: url });
    next.on("notification", ({ channel, payload = "" }) => {
      if (channel === NOTIFY_OUTBOX) listener({ kind: "outbox", channel: payload });
      else if (channel === NOTIFY_INBOX) listener({ kind: "inbox", sessionKey: payload });
    });
    next.on("error", (err) => {
      onError?.(err);
      next.end().catch(() => {});
      if (!stopped) retry = setTimeout(() => void connect().catch(again), RELISTEN_MS);
    });
    await next.connect();
    await next.query(`LISTEN ${NOTIFY_OUTBOX}; LISTEN ${NOTIFY_INBOX}`);
    client = next;
  };
  const again = (err: Error) => {
    onError?.(err);
    if (!stopped) retry = setTimeout(() => void connect().catch(again), RELISTEN_MS);
  };
  await connect();
  return async () => {
    stopped = true;
    clearTimeout(retry);
    await client?.end().catch(() => {});
  };
}
