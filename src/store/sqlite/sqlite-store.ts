import { type Store, type StoreOptions, storeOn } from "../store.js";
import { closeDatabase, type Database, openDatabase } from "./database.js";
import { SqliteMemory } from "./memory.js";
import { sqliteSql } from "./sql.js";

/** The embedded engine: one SQLite file (WAL) under PINCER_HOME, one connection (`db`, for tests that look at rows). */
export type SqliteStore = Store & { readonly engine: "sqlite"; readonly db: Database };

/** Opens (creating and migrating if needed) the SQLite database at `file` (":memory:" for tests), or one opened already. */
export function openSqliteStore(file: string | Database, options: StoreOptions = {}): SqliteStore {
  const db = typeof file === "string" ? openDatabase(file) : file;
  const sql = sqliteSql(db);
  return {
    engine: "sqlite",
    db,
    ...storeOn(sql, new SqliteMemory(sql), options),
    async close() {
      if (options.brief) db.close();
      else closeDatabase(db);
    },
  };
}
