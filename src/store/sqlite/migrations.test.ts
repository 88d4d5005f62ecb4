import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MIGRATIONS as postgresMigrations } from "../postgres/schema.js";
import { closeDatabase, type Database, openDatabase } from "./database.js";
import type { Migration } from "./early-migrations.js";
import { migrations } from "./migrations.js";
import { openSqliteStore } from "./sqlite-store.js";

/** The list as homes made before the renumbering recorded it: the same SQL in the same order, under the old ids. */
const oldList: Migration[] = migrations.map((m) => ({ id: m.formerly ?? m.id, sql: m.sql }));

const schemaOf = (db: Database) =>
  db
    .prepare(
      "SELECT type, name, sql FROM sqlite_master WHERE name != 'migrations' AND name NOT LIKE 'sqlite_stat%' ORDER BY type, name",
    )
    .all();
const recorded = (db: Database) => db.prepare("SELECT id FROM migrations ORDER BY id").pluck().all();

/** Every migration recorded, the schema a new home's; closes `db`. */
function expectCurrent(db: Database) {
  expect(recorded(db)).toEqual(migrations.map((m) => m.id));
  const fresh = openDatabase(":memory:");
  expect(schemaOf(db)).toEqual(schemaOf(fresh));
  closeDatabase(fresh);
  closeDatabase(db);
}

describe("migration ids", () => {
  it.each([
    ["SQLite", migrations],
    ["PostgreSQL", postgresMigrations],
  ])("%s's are NNN-name, numbered one by one in the order they run", (_, list) => {
    const numbered = list.map((m, i) => new RegExp(`^${String(i + 1).padStart(3, "0")}-[a-z0-9-]+$`).test(m.id));
    expect(list.filter((_, i) => !numbered[i]).map((m) => m.id)).toEqual([]);
  });

  it("never reuse a former id as a new one", () => {
    const ids = new Set(migrations.map((m) => m.id));
    expect(migrations.filter((m) => m.formerly && ids.has(m.formerly))).toEqual([]);
  });
});

describe("a home made before ids were numbered in order", () => {
  let dir = "";
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("upgrades in place: no migration runs twice, its data stays, the schema matches a new home's", async () => {
    dir = mkdtempSync(join(tmpdir(), "pincer-migrations-"));
    const path = join(dir, "pincer.db");
    let db = openDatabase(path, oldList);
    await openSqliteStore(db).conversations.append("telegram:1", [{ role: "user", content: "kept café" }]);
    closeDatabase(db);

    db = openDatabase(path);
    expect(recorded(db)).toEqual(migrations.map((m) => m.id));
    const history = await openSqliteStore(db).conversations.recent("telegram:1", 10_000);
    expect(history.map((m) => m.content)).toEqual(["kept café"]);
    const fresh = openDatabase(":memory:");
    expect(schemaOf(db)).toEqual(schemaOf(fresh));
    closeDatabase(fresh);
    closeDatabase(db);
    // And again: a second start finds nothing left to do.
    db = openDatabase(path);
    expect(recorded(db)).toEqual(migrations.map((m) => m.id));
    closeDatabase(db);
  });

  it("made by an older pincer still (only part of the old list) runs just the rest", () => {
    dir = mkdtempSync(join(tmpdir(), "pincer-migrations-"));
    const path = join(dir, "pincer.db");
    const cut = oldList.findIndex((m) => m.id === "170-turn-steps");
    closeDatabase(openDatabase(path, oldList.slice(0, cut)));
    expectCurrent(openDatabase(path));
  });
});

describe("an upgrade", () => {
  let dir = "";
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("applies whole or not at all: a migration that fails leaves the ones before it unapplied, the next start runs all", () => {
    dir = mkdtempSync(join(tmpdir(), "pincer-migrations-"));
    const path = join(dir, "pincer.db");
    const cut = migrations.length - 3;
    closeDatabase(openDatabase(path, migrations.slice(0, cut)));
    const broken = { id: "999-broken", sql: "CREATE TABLE broken (" };
    expect(() => openDatabase(path, [...migrations, broken])).toThrow(/syntax error|incomplete input/);
    const db = openDatabase(path, migrations.slice(0, cut));
    expect(recorded(db)).toEqual(migrations.slice(0, cut).map((m) => m.id));
    closeDatabase(db);
    expectCurrent(openDatabase(path));
  });
});
