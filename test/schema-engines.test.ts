import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPool } from "../src/store/postgres/db.js";
import { openPostgresStore } from "../src/store/postgres/postgres-store.js";
import { MIGRATIONS, migrate } from "../src/store/postgres/schema.js";
import { closeDatabase, type Database, openDatabase } from "../src/store/sqlite/database.js";
import { hasPostgres, startPostgres, type TestPostgres } from "./helpers/postgres.js";

/**
 * Both engines' migrations describe one schema: every table, column (its type, NOT NULL, default), CHECK list and
 * unique key of one is in the other, and every index SQLite has PostgreSQL has too. What only one engine has is named
 * here, with its reason; anything else that differs fails.
 */
const ONLY_SQLITE_TABLES = [
  "migrations", // PostgreSQL's is store_migrations
  "messages_fts_pending", // FTS5 indexes messages in batches; PostgreSQL's GIN index as they are written
];
const ONLY_POSTGRES_TABLES = [
  "store_migrations",
  "memory_file_paragraphs", // SQLite keeps MEMORY.md's paragraphs in its FTS5 table memory_file_fts
];
/** Insertion order across processes (SQLite's rowid gives it): see Sql.seq. */
const ONLY_POSTGRES_COLUMNS = ["inbox.seq", "pairing_requests.seq", "helper_runs.seq"];
/** One open conversation per chat whichever process creates it (one process cannot race itself). */
const ONLY_POSTGRES_UNIQUE = ["conversations(session_key) partial"];
/** Each SQLite type and the PostgreSQL types that store the same values. */
const TYPES: Record<string, string[]> = {
  INTEGER: ["bigint", "integer", "boolean"],
  TEXT: ["text"],
  REAL: ["double precision"],
};

interface Column {
  table: string;
  name: string;
  type: string;
  notNull: boolean;
  default: string | null;
}

/** A default as both engines would print it: no casts, no outer parentheses. */
const plainDefault = (value: string | null) =>
  value === null || value.startsWith("nextval(") ? null : value.replace(/::[a-z ]+/g, "").replace(/^\((.*)\)$/, "$1");

/** CHECK (col IN ('a', 'b')) lists, as `table.col: a,b` (sorted). */
function checkLists(table: string, definition: string): string[] {
  const lists: string[] = [];
  for (const [, column, values] of definition.matchAll(/\(?(\w+)\)? (?:IN \(|= ANY \(\(?ARRAY\[)([^\])]*)/g)) {
    const items = [...values.matchAll(/'([^']*)'/g)].map((m) => m[1]).sort();
    if (items.length > 0) lists.push(`${table}.${column}: ${items.join(",")}`);
  }
  return lists;
}

function sqliteSchema(db: Database) {
  const tables = (
    db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").all() as Array<{
      name: string;
      sql: string;
    }>
  ).filter((t) => !/_fts(_|$)/.test(t.name)); // FTS5's virtual tables and their shadows
  const columns: Column[] = [];
  const unique: string[] = [];
  const indexes: string[] = [];
  const checks: string[] = [];
  for (const { name: table, sql } of tables) {
    const info = db.prepare(`PRAGMA table_info(${table})`).all() as Array<{
      name: string;
      type: string;
      notnull: number;
      dflt_value: string | null;
      pk: number;
    }>;
    for (const c of info) {
      columns.push({
        table,
        name: c.name,
        type: c.type,
        notNull: c.notnull === 1 || c.pk > 0,
        default: plainDefault(c.dflt_value),
      });
    }
    const keys = info.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk);
    if (keys.length > 0) unique.push(`${table}(${keys.map((c) => c.name).join(",")})`);
    for (const index of db.prepare(`PRAGMA index_list(${table})`).all() as Array<{
      name: string;
      unique: number;
      origin: string;
    }>) {
      const cols = (db.prepare(`PRAGMA index_info(${index.name})`).all() as Array<{ name: string }>).map((c) => c.name);
      if (index.origin !== "pk" && index.unique) unique.push(`${table}(${cols.join(",")})`);
      if (index.origin === "c") indexes.push(`${table}.${index.name}`);
    }
    checks.push(...checkLists(table, sql));
  }
  return { tables: tables.map((t) => t.name), columns, unique, indexes, checks };
}

async function postgresSchema(url: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const q = async <R>(sql: string) => (await client.query(sql)).rows as R[];
    const tables = (
      await q<{ name: string }>(
        "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'",
      )
    ).map((t) => t.name);
    const columns = (
      await q<{ table: string; name: string; type: string; nullable: string; default: string | null }>(
        `SELECT table_name AS table, column_name AS name, data_type AS type, is_nullable AS nullable, column_default AS default
           FROM information_schema.columns WHERE table_schema = current_schema()`,
      )
    ).map((c) => ({ ...c, notNull: c.nullable === "NO", default: plainDefault(c.default) }));
    const unique = (
      await q<{ table: string; columns: string; partial: boolean }>(
        `SELECT t.relname AS table, i.indisunique, i.indpred IS NOT NULL AS partial,
                string_agg(a.attname, ',' ORDER BY k.n) AS columns
           FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid JOIN pg_namespace s ON s.oid = t.relnamespace
           CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n)
           JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
          WHERE s.nspname = current_schema() AND i.indisunique
          GROUP BY t.relname, i.indexrelid, i.indisunique, i.indpred`,
      )
    ).map((u) => `${u.table}(${u.columns})${u.partial ? " partial" : ""}`);
    const indexes = (
      await q<{ table: string; name: string }>(
        "SELECT tablename AS table, indexname AS name FROM pg_indexes WHERE schemaname = current_schema()",
      )
    ).map((i) => `${i.table}.${i.name}`);
    const checks = (
      await q<{ table: string; definition: string }>(
        `SELECT t.relname AS table, pg_get_constraintdef(c.oid) AS definition
           FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid JOIN pg_namespace s ON s.oid = t.relnamespace
          WHERE s.nspname = current_schema() AND c.contype = 'c'`,
      )
    ).flatMap((c) => checkLists(c.table, c.definition));
    return { tables, columns, unique, indexes, checks };
  } finally {
    await client.end();
  }
}

const sorted = (items: string[]) => [...items].sort();
const key = (c: Column) => `${c.table}.${c.name}`;

describe.skipIf(!hasPostgres())("the schema on SQLite and on PostgreSQL", () => {
  let server: TestPostgres | undefined;
  let lite: ReturnType<typeof sqliteSchema>;
  let post: Awaited<ReturnType<typeof postgresSchema>>;
  beforeAll(async () => {
    server = await startPostgres();
    const url = await server.newDatabase();
    const pool = createPool(url);
    await migrate(pool).finally(() => pool.end());
    post = await postgresSchema(url);
    const db = openDatabase(":memory:");
    lite = sqliteSchema(db);
    closeDatabase(db);
  }, 90_000);
  afterAll(() => server?.stop());

  it("has the same tables", () => {
    expect(sorted(lite.tables.filter((t) => !ONLY_SQLITE_TABLES.includes(t)))).toEqual(
      sorted(post.tables.filter((t) => !ONLY_POSTGRES_TABLES.includes(t))),
    );
  });

  it("has the same columns, each of a type that holds the same values, as nullable, with the same default", () => {
    const shared = (c: Column) =>
      !ONLY_SQLITE_TABLES.includes(c.table) &&
      !ONLY_POSTGRES_TABLES.includes(c.table) &&
      !ONLY_POSTGRES_COLUMNS.includes(key(c));
    const mapped = (c: Column) => ({ ...c, type: `${TYPES[c.type]?.includes(postType(c)) ? postType(c) : c.type}` });
    const byKey = new Map(post.columns.map((c) => [key(c), c]));
    const postType = (c: Column) => byKey.get(key(c))?.type ?? "(missing)";
    const described = (columns: Column[]) =>
      sorted(columns.map((c) => `${key(c)} ${c.type}${c.notNull ? " NOT NULL" : ""} DEFAULT ${c.default}`));
    expect(described(lite.columns.filter(shared).map(mapped))).toEqual(described(post.columns.filter(shared)));
  });

  it("keeps every time (ms since the epoch) and every row id it points to in a bigint on PostgreSQL", () => {
    const narrow = post.columns.filter(
      (c) => c.type !== "bigint" && /(_at|^at_ms|^anchor_ms|_id|_through)$/.test(c.name) && /int|numeric/.test(c.type),
    );
    expect(narrow.map(key)).toEqual([]);
  });

  it("has the same unique keys and CHECK lists, and every index SQLite has", () => {
    const table = (u: string) => u.slice(0, u.indexOf("("));
    expect(sorted(lite.unique.filter((u) => !ONLY_SQLITE_TABLES.includes(table(u))))).toEqual(
      sorted(post.unique.filter((u) => !ONLY_POSTGRES_UNIQUE.includes(u) && !ONLY_POSTGRES_TABLES.includes(table(u)))),
    );
    expect(sorted(lite.checks)).toEqual(sorted(post.checks));
    expect(lite.indexes.filter((i) => !post.indexes.includes(i))).toEqual([]);
  });

  it("upgrades a database made before accents were folded: its old messages are found without them", async () => {
    const url = await (server as TestPostgres).newDatabase();
    const pool = createPool(url);
    try {
      await migrate(
        pool,
        MIGRATIONS.slice(
          0,
          MIGRATIONS.findIndex((m) => m.id === "008-search-folds-accents"),
        ),
      );
      const { rows } = await pool.query(
        "INSERT INTO conversations (session_key, created_at) VALUES ('telegram:1', 1) RETURNING id",
      );
      await pool.query(
        "INSERT INTO messages (conversation_id, role, content, tokens, created_at) VALUES ($1, 'user', 'lunch at the Café Müller', 9, 1)",
        [rows[0].id],
      );
    } finally {
      await pool.end();
    }
    const store = await openPostgresStore(url);
    try {
      const hits = await store.memory.search("cafe muller", { sessionKey: "telegram:1", memoryFile: false, limit: 5 });
      expect(hits.map((h) => h.snippet)).toEqual(["lunch at the «Café» «Müller»"]);
    } finally {
      await store.close();
    }
  });
});
