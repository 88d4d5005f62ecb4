/** The store's SQL on either engine: `$1, $2…` placeholders, SQL both understand, the few differences behind it. */
export interface Sql {
  readonly engine: "sqlite" | "postgres";
  /** The column that orders a table's rows as inserted where no id does (SQLite's rowid, a bigserial here). */
  readonly seq: "rowid" | "seq";
  rows<R = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<R[]>;
  /** Runs a write; returns how many rows it changed. */
  run(sql: string, params?: readonly unknown[]): Promise<number>;
  /** Runs `work` in one transaction: all of it commits, or none. Inside, `tx` is the transaction's. */
  transaction<T>(work: (tx: Sql) => Promise<T>): Promise<T>;
  /** Wakes every listening process (NOTIFY at commit); carries nothing, as any role that can connect can send one. */
  notify(channel: string): Promise<void>;
  /** The rows of `select` in `order` while their `tokens` fit in `budget` (the first `minRows` always). */
  budgeted<R extends { tokens: number }>(
    select: string,
    order: string,
    params: readonly unknown[],
    budget: number,
    minRows?: number,
  ): Promise<R[]>;
}

/** The first row's first column (a count, an id), or undefined. */
export async function scalar<T>(db: Sql, sql: string, params: readonly unknown[] = []): Promise<T | undefined> {
  const [row] = await db.rows(sql, params);
  return row === undefined ? undefined : (Object.values(row)[0] as T);
}

/** The total (a count, a sum) the query returns; 0 for no row. */
export async function total(db: Sql, sql: string, params: readonly unknown[] = []): Promise<number> {
  return (await scalar<number>(db, sql, params)) ?? 0;
}

export async function exists(db: Sql, sql: string, params: readonly unknown[]): Promise<boolean> {
  return (await db.rows(sql, params)).length > 0;
}

export function withoutNulls<T extends object>(row: T): T {
  return Object.fromEntries(Object.entries(row).map(([key, value]) => [key, value ?? undefined])) as T;
}

/** `$from, $from+1…` for each value: an IN list both engines read. */
export function placeholders(values: readonly unknown[], from: number): string {
  return values.map((_, i) => `$${from + i}`).join(", ") || "NULL";
}

export const snake = (field: string) => field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** `session_key AS "sessionKey", …`: the columns of `fields`, named as the record's fields. */
export function columns(fields: readonly string[]): string {
  return fields.map((field) => (snake(field) === field ? field : `${snake(field)} AS "${field}"`)).join(", ");
}

/** A row of `SELECT *` as a record: camelCase fields, NULLs as undefined. */
export function camelCased<T>(row: Record<string, unknown>): T {
  const camel = (column: string) => column.replace(/_(.)/g, (_, c: string) => c.toUpperCase());
  return withoutNulls(Object.fromEntries(Object.entries(row).map(([column, value]) => [camel(column), value]))) as T;
}

/** The SQL and parameters inserting `fields` of `record` into their columns (undefined as NULL), then `rest`. */
export function insert<T extends object>(
  table: string,
  record: T,
  fields: readonly (keyof T & string)[] = Object.keys(record) as (keyof T & string)[],
  rest = "",
): [string, unknown[]] {
  const sql = `INSERT INTO ${table} (${fields.map(snake).join(", ")}) VALUES (${placeholders(fields, 1)}) ${rest}`;
  return [sql, fields.map((field) => record[field] ?? null)];
}

/** insert(), or where a row with the same `keys` is there already, that row's other columns set to the record's. */
export function upsert(table: string, record: object, keys: string[]): [string, unknown[]] {
  const others = Object.keys(record).filter((field) => !keys.includes(field));
  const set = others.map((field) => `${snake(field)} = excluded.${snake(field)}`).join(", ");
  return insert(table, record, undefined, `ON CONFLICT (${keys.map(snake).join(", ")}) DO UPDATE SET ${set}`);
}

export abstract class SqlGroup {
  constructor(protected readonly db: Sql) {}
}
