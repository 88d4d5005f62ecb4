/**
 * A home made before agents existed upgrades in place on both engines: its rows are the agent main's (their session keys
 * never move), its usage counts for main, and main's MEMORY.md index is rebuilt from the file; another agent sees none
 * of it; pincer started on it answers as before, the old history in view. The old home is made with the migration list
 * as the code before agents had it.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import type { App } from "../src/app.js";
import { databasePath } from "../src/paths.js";
import { openStore } from "../src/store/open.js";
import { pgSql } from "../src/store/postgres/db.js";
import { PostgresMemory } from "../src/store/postgres/memory.js";
import { MIGRATIONS, migrate } from "../src/store/postgres/schema.js";
import { closeDatabase, openDatabase } from "../src/store/sqlite/database.js";
import { migrations } from "../src/store/sqlite/migrations.js";
import { openSqliteStore } from "../src/store/sqlite/sqlite-store.js";
import { type Store, storeOn } from "../src/store/store.js";
import { recordingChannel, tempHome, testApp, userMessage } from "./helpers/app.js";
import { ENGINES, type Engine, engineEnv } from "./helpers/engines.js";
import { fakeModelForFile } from "./helpers/model.js";

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

/** A home (and, on PostgreSQL, its database) as the code before agents left it: a conversation, a chat's model, usage
 * and the old MEMORY.md index. Returns what puts pincer on it. */
async function oldHome(engine: Engine, env: Record<string, string>) {
  const home = tempHome("pincer-upgrade-");
  const write = async (store: Pick<Store, "conversations" | "chatModels">) => {
    for (const key of ["telegram:1", "console:1"]) {
      await store.conversations.append(key, [{ role: "user", content: "kept from before: the garden gate is green" }]);
    }
    for (const key of ["telegram:1", "console:1"]) await store.chatModels.set(key, "big", "42");
  };
  if (engine === "SQLite") {
    const old = openDatabase(databasePath(home), before(migrations));
    await write(openSqliteStore(old));
    for (const sql of OLD_ROWS("memory_file_fts")) old.exec(sql);
    closeDatabase(old);
  } else {
    const pool = new pg.Pool({ connectionString: env.PINCER_DATABASE_URL });
    await migrate(pool, before(MIGRATIONS));
    const sql = pgSql(pool);
    await write(storeOn(sql, new PostgresMemory(sql)));
    for (const row of OLD_ROWS("memory_file_paragraphs")) await pool.query(row);
    await pool.end();
  }
  return { home, where: { path: databasePath(home), url: env.PINCER_DATABASE_URL } };
}

const model = fakeModelForFile();

describe.each(ENGINES)("a %s home from before agents", (engine) => {
  const database = engineEnv(engine);
  const apps: App[] = [];
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.stop();
  });

  it("upgrades in place: its conversations, chat models and usage are main's, another agent sees none", async () => {
    const { where } = await oldHome(engine, await database.env());
    const store = await openStore(where);
    try {
      expect(store.engine).toBe(engine === "SQLite" ? "sqlite" : "postgres");
      expect((await store.conversations.recent("telegram:1", 10_000)).map((m) => m.content)).toEqual([
        "kept from before: the garden gate is green",
      ]);
      expect(await store.conversations.recent("shop/telegram:1", 10_000)).toEqual([]);
      expect(await store.chatModels.get("telegram:1")).toBe("big");
      expect(await store.chatModels.get("shop/telegram:1")).toBeUndefined();
      await expectUpgraded(store);
    } finally {
      await store.close();
    }
  });

  it("answers as before: the old history in view, on the model the chat chose, MEMORY.md found again", async () => {
    const env = await database.env();
    const { home } = await oldHome(engine, env);
    model.respond((request) => {
      const last = request.messages.at(-1);
      if (last?.role === "tool") return { content: `found: ${String(last.content)}` };
      return { toolCalls: [{ name: "memory_search", arguments: { query: "key" } }] };
    });
    const app = await testApp(model.url, home, env, (config) => {
      config.agent.models = [{ name: "big" }];
    });
    apps.push(app);
    writeFileSync(join(app.config.workspace, "MEMORY.md"), "The shed key is under the pot.");
    const channel = recordingChannel(app);
    await app.start([channel]);
    await app.bus.publishInbound(userMessage("1", "where is the shed key?"));
    await channel.waitFor(1);
    expect(channel.sent[0]?.text).toMatch(/^found: \[[\d-]+ · MEMORY.md\] The shed «key» is under the pot.$/);
    const [first] = model.requests;
    expect(JSON.stringify(first?.messages)).toContain("kept from before: the garden gate is green");
    expect(String(first?.messages[0]?.content)).toContain("Conversation: console:1");
    // The model the chat chose before is still its model.
    expect(model.requests.map((r) => r.model)).toEqual(["big", "big"]);
  });
});
