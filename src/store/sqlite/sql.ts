import type { Sql } from "../sql.js";
import type { Database } from "./database.js";

/** better-sqlite3 binds `$1, $2…` by name ("1", "2"…), and takes no booleans. */
function bind(params: readonly unknown[]): Record<string, unknown> {
  return Object.fromEntries(params.map((value, i) => [i + 1, typeof value === "boolean" ? Number(value) : value]));
}

/** The store's SQL on pincer's one SQLite connection. While a transaction (BEGIN IMMEDIATE … COMMIT) is open, other
 * calls wait (on one connection they would join it); check and start are one step (no await between): only one goes. */
export function sqliteSql(db: Database): Sql {
  let open: Promise<unknown> | undefined;
  const idle = () => open?.catch(() => {});
  const begin = async <T>(work: (tx: Sql) => Promise<T>): Promise<T> => {
    while (open) await idle();
    const done = (async () => {
      db.exec("BEGIN IMMEDIATE");
      try {
        const result = await work(inside);
        db.exec("COMMIT");
        return result;
      } catch (err) {
        if (db.inTransaction) db.exec("ROLLBACK");
        throw err;
      }
    })();
    open = done;
    try {
      return await done;
    } finally {
      if (open === done) open = undefined;
    }
  };
  /** The calls inside a transaction, or (`outside`) the ones that first wait for an open one. */
  const calls = (outside: boolean): Sql => {
    const self: Sql = {
      engine: "sqlite",
      seq: "rowid",
      async rows<R>(sql: string, params: readonly unknown[] = []) {
        while (outside && open) await idle();
        return db.prepare(sql).all(bind(params)) as R[];
      },
      async run(sql, params = []) {
        while (outside && open) await idle();
        return db.prepare(sql).run(bind(params)).changes;
      },
      transaction: outside ? begin : (work) => work(self),
      async notify() {},
      async budgeted(select, order, params, budget, minRows = 0) {
        while (outside && open) await idle();
        const statement = db.prepare(`${select} ORDER BY ${order}`);
        const names = statement.columns().map((column) => column.name);
        const tokensAt = names.indexOf("tokens");
        // Rows as arrays: better-sqlite3 builds them several times faster, and every turn reads its history here.
        const rows = statement.raw(true).iterate(bind(params)) as IterableIterator<unknown[]>;
        const picked: Record<string, unknown>[] = [];
        let used = 0;
        // Walks the index and stops at the budget: the cost depends on the budget, not on the table.
        for (const values of rows) {
          const tokens = values[tokensAt] as number;
          if (picked.length >= minRows && used + tokens > budget) break;
          used += tokens;
          const row: Record<string, unknown> = {};
          for (let i = 0; i < names.length; i++) row[names[i]] = values[i];
          picked.push(row);
        }
        rows.return?.();
        // Rows as the caller's R (the interface's): the columns are its select's.
        return picked as never;
      },
    };
    return self;
  };
  const inside = calls(false);
  return calls(true);
}
