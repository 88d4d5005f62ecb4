import { openSqliteStore, type StoreOptions } from "./sqlite/sqlite-store.js";
import type { Store } from "./store.js";

export type { StoreOptions } from "./sqlite/sqlite-store.js";

/** Opens the store pincer runs on: the embedded SQLite file at `path`. */
export async function openStore(path: string, options: StoreOptions = {}): Promise<Store> {
  return openSqliteStore(path, options);
}

/** Opens the store for one short command (CLI) and always closes it. */
export async function withStore<T>(
  path: string,
  use: (store: Store) => Promise<T>,
  options?: StoreOptions,
): Promise<T> {
  const store = await openStore(path, { ...options, brief: true });
  try {
    return await use(store);
  } finally {
    await store.close();
  }
}
