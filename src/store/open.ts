import { openSqliteStore } from "./sqlite/sqlite-store.js";
import type { Store, StoreOptions } from "./store.js";

/** Where the store lives: the SQLite file, or (PINCER_DATABASE_URL) a PostgreSQL database. */
type StoreLocation = { path: string; url?: string };

/** Opens pincer's store: PostgreSQL when a URL is given (its client loaded only then), else the embedded SQLite. */
export async function openStore(where: StoreLocation, options: StoreOptions = {}): Promise<Store> {
  if (!where.url) return openSqliteStore(where.path, options);
  const { openPostgresStore } = await import("./postgres/postgres-store.js");
  return openPostgresStore(where.url, options);
}

/** Opens the store for one short command (CLI) and always closes it. */
export async function withStore<T>(where: StoreLocation, use: (store: Store) => Promise<T>): Promise<T> {
  const store = await openStore(where, { brief: true });
  try {
    return await use(store);
  } finally {
    await store.close();
  }
}
