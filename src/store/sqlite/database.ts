import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import BetterSqlite3 from "better-sqlite3";
import type { Migration } from "./early-migrations.js";
import { migrations as allMigrations } from "./migrations.js";

export type Database = BetterSqlite3.Database;

export function openDatabase(path: string, migrations: Migration[] = allMigrations): Database {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  const db = new BetterSqlite3(path);
  db.pragma("journal_mode = WAL");
  // NORMAL is durable across process crashes in WAL mode; only a power loss can drop the last commits.
  db.pragma("synchronous = NORMAL");
  db.pragma("foreign_keys = ON");
  db.pragma("busy_timeout = 5000");
  // Deleted rows are overwritten with zeros, so what /forget removes leaves the file (store/forget.ts).
  db.pragma("secure_delete = ON");
  migrate(db, migrations);
  reuseStatements(db);
  return db;
}

/** One compiled statement per SQL text from `db.prepare`, reset to plain rows (a caller's `.pluck()` never leaks). */
function reuseStatements(db: Database): void {
  const prepare = db.prepare.bind(db);
  const statements = new Map<string, BetterSqlite3.Statement>();
  db.prepare = ((sql: string) => {
    let statement = statements.get(sql);
    // One still being iterated (a loop that threw half-way) cannot run again: compile a fresh one.
    if (!statement || statement.busy) {
      statement = prepare(sql);
      statements.set(sql, statement);
    } else if (statement.reader) {
      statement.pluck(false).expand(false).raw(false);
    }
    return statement;
  }) as Database["prepare"];
}

function migrate(db: Database, migrations: Migration[]): void {
  db.exec("CREATE TABLE IF NOT EXISTS migrations (id TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)");
  const applied = new Set(db.prepare("SELECT id FROM migrations").pluck().all() as string[]);
  // A home made before ids were numbered in order recorded the old ones: take them over, so nothing runs twice.
  const renamed = migrations.filter((m) => m.formerly && applied.has(m.formerly) && !applied.has(m.id));
  const rename = db.prepare("UPDATE migrations SET id = ? WHERE id = ?");
  db.transaction(() => {
    for (const m of renamed) rename.run(m.id, m.formerly);
  })();
  for (const m of renamed) applied.add(m.id);
  const record = db.prepare("INSERT INTO migrations (id, applied_at) VALUES (?, ?)");
  // One transaction: an upgrade applies whole or not at all, and a new home's schema is one commit, not one each.
  db.transaction(() => {
    for (const migration of migrations.filter((m) => !applied.has(m.id))) {
      db.exec(migration.sql);
      record.run(migration.id, Date.now());
    }
  })();
}

/** Closes for good: PRAGMA optimize updates query statistics and the WAL folds back, so pincer leaves one tidy file. */
export function closeDatabase(db: Database): void {
  if (!db.open) return;
  try {
    db.pragma("optimize");
    db.pragma("wal_checkpoint(TRUNCATE)");
  } finally {
    db.close();
  }
}
