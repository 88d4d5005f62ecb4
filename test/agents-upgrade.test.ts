/**
 * A home made before agents existed upgrades in place on both engines: its rows are the agent main's (their session keys
 * never move), its usage counts for main, and main's MEMORY.md index is rebuilt from the file; another agent sees none
 * of it. The old home is made with the migration list as the code before agents had it.
 */
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openPostgresStore } from "../src/store/postgres/postgres-store.js";
import { MIGRATIONS, migrate } from "../src/store/postgres/schema.js";
import { closeDatabase, openDatabase } from "../src/store/sqlite/database.js";
import { migrations } from "../src/store/sqlite/migrations.js";
import { openSqliteStore } from "../src/store/sqlite/sqlite-store.js";
import type { Store } from "../src/store/store.js";
import { tempHome } from "./helpers/app.js";
import { hasPostgres, startPostgres, type TestPostgres } from "./helpers/postgres.js";

const before = <T extends { id: string }>(list: T[]) =>
  list.slice(
    0,
    list.findIndex((m) => m.id.endsWith("-agents")),
  );
const NOW = Date.UTC(2026, 11, 15, 12);
const DAY_START = Date.UTC(2026, 11, 15);
const MONTH_START = Date.UTC(2026, 11, 1);

/** What an old pincer wrote into the tables the agents' migration changes, as it wrote it. */
const OLD_ROWS = (memoryTable: string) => [
  `INSERT INTO model_usage (session_key, kind, model, prompt_tokens, completion_tokens, cached_tokens, estimated, cost, created_at)
     VALUES ('telegram:1', 'conversation', 'small', 100, 10, 0, 0, 0.5, ${NOW})`,
  "INSERT INTO memory_file_state (id, hash, modified_at) VALUES (1, 'old-hash', 1)",
  `INSERT INTO ${memoryTable} (text) VALUES ('the old index of the shed')`,
];

async function expectUpgraded(store: Store): Promise<void> {
  const mine = await store.usage.groups(MONTH_START, DAY_START, "telegram:1");
  expect(mine).toEqual([expect.objectContaining({ here: true, calls: 1, cost: 0.5 })]);
  expect(await store.usage.groups(MONTH_START, DAY_START, "shop/telegram:1")).toEqual([]);
  const scope = (sessionKey: string) => ({ sessionKey, memoryFile: true, limit: 5 });
  // The old index went with its table: MEMORY.md is indexed again from the file at the next search.
  expect(await store.memory.search("shed", scope("telegram:1"))).toEqual([]);
  await store.memory.syncMemoryFile("main", "new-hash", 2, ["the shed key is under the pot"]);
  expect((await store.memory.search("shed", scope("telegram:1"))).map((h) => h.kind)).toEqual(["memory"]);
  expect(await store.memory.search("shed", scope("shop/telegram:1"))).toEqual([]);
}

describe("a SQLite home from before agents", () => {
  it("upgrades in place: its conversations, jobs and usage are main's, another agent sees none", async () => {
    const path = join(tempHome("pincer-upgrade-"), "pincer.db");
    const old = openDatabase(path, before(migrations));
    const oldStore = openSqliteStore(old);
    await oldStore.conversations.append("telegram:1", [{ role: "user", content: "kept from before" }]);
    await oldStore.chatModels.set("telegram:1", "big", "42");
    for (const sql of OLD_ROWS("memory_file_fts")) old.exec(sql);
    closeDatabase(old);

    const store = openSqliteStore(path);
    try {
      expect((await store.conversations.recent("telegram:1", 10_000)).map((m) => m.content)).toEqual([
        "kept from before",
      ]);
      expect(await store.conversations.recent("shop/telegram:1", 10_000)).toEqual([]);
      expect(await store.chatModels.get("telegram:1")).toBe("big");
      expect(await store.chatModels.get("shop/telegram:1")).toBeUndefined();
      await expectUpgraded(store);
    } finally {
      await store.close();
    }
  });
});

describe.skipIf(!hasPostgres())("a PostgreSQL cluster's database from before agents", () => {
  let server: TestPostgres | undefined;
  beforeAll(async () => {
    server = await startPostgres();
  }, 60_000);
  afterAll(() => server?.stop());

  it("upgrades in place the same way", async () => {
    const url = await (server as TestPostgres).newDatabase();
    const pool = new pg.Pool({ connectionString: url });
    await migrate(pool, before(MIGRATIONS));
    for (const sql of OLD_ROWS("memory_file_paragraphs")) await pool.query(sql);
    await pool.end();
    const store = await openPostgresStore(url);
    try {
      await expectUpgraded(store);
    } finally {
      await store.close();
    }
  });
});
