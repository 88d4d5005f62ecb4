import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Store } from "../store.js";
import { closeDatabase, type Database, openDatabase } from "./database.js";
import { migrations } from "./migrations.js";
import { openSqliteStore } from "./sqlite-store.js";

const DAY = 24 * 60 * 60 * 1000;
const scope = { sessionKey: "s", memoryFile: false, limit: 10 };

/**
 * The index holds exactly what it should: every user and assistant message not still marked, each
 * with its current text — compared token by token (fts5vocab) with an index built afresh — and
 * FTS5's own structural check passes. A 'delete' of a row never indexed would show here.
 */
function checkIndex(db: Database): void {
  db.prepare("INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 0)").run();
  db.exec(`
    DROP TABLE IF EXISTS temp.expected_fts;
    CREATE VIRTUAL TABLE temp.expected_fts USING fts5(content, tokenize='trigram remove_diacritics 1');
    INSERT INTO temp.expected_fts (rowid, content)
      SELECT id, content FROM messages WHERE role IN ('user', 'assistant') AND coalesce(content, '') != ''
        AND id NOT IN (SELECT id FROM messages_fts_pending);
    CREATE VIRTUAL TABLE IF NOT EXISTS temp.actual_terms USING fts5vocab(main, messages_fts, instance);
    DROP TABLE IF EXISTS temp.expected_terms;
    CREATE VIRTUAL TABLE temp.expected_terms USING fts5vocab(temp, expected_fts, instance);
  `);
  const diff = (a: string, b: string) =>
    db.prepare(`SELECT term, doc, offset FROM ${a} EXCEPT SELECT term, doc, offset FROM ${b}`).all();
  expect(diff("temp.actual_terms", "temp.expected_terms")).toEqual([]);
  expect(diff("temp.expected_terms", "temp.actual_terms")).toEqual([]);
}

const pending = (db: Database) => db.prepare("SELECT count(*) FROM messages_fts_pending").pluck().get();
const found = async (memory: Store["memory"], query: string) =>
  (await memory.search(query, scope)).map((hit) => hit.snippet);

describe("the message search index, filled in batches", () => {
  it("marks stored messages and indexes them before a search, so a search sees every message", async () => {
    const db = openDatabase(":memory:");
    const conversations = openSqliteStore(db).conversations;
    const memory = openSqliteStore(db).memory;
    await conversations.append("s", [
      { role: "user", content: "where is the blue umbrella" },
      { role: "assistant", content: "in the hallway closet" },
      { role: "tool", content: "umbrella tool output", toolCallId: "c1" },
    ]);
    expect(pending(db)).toBe(2);
    expect(await found(memory, "umbrella")).toEqual(["where is the blue «umbrella»"]);
    expect(pending(db)).toBe(0);
    checkIndex(db);
    expect(await memory.indexPending()).toBe(0);
  });

  it("keeps the index whole when messages are edited or deleted before and after they were indexed", async () => {
    const db = openDatabase(":memory:");
    const conversations = openSqliteStore(db).conversations;
    const memory = openSqliteStore(db).memory;
    await conversations.append("s", [
      { role: "user", content: "indexed first alpha" },
      { role: "assistant", content: "indexed second bravo" },
    ]);
    expect(await memory.indexPending()).toBe(2);
    await conversations.append("s", [
      { role: "user", content: "pending third charlie" },
      { role: "assistant", content: "pending fourth delta" },
    ]);
    const id = (text: string) => db.prepare("SELECT id FROM messages WHERE content = ?").pluck().get(text);
    const edit = db.prepare("UPDATE messages SET content = ? WHERE id = ?");
    edit.run("indexed first echo", id("indexed first alpha"));
    edit.run("pending third foxtrot", id("pending third charlie"));
    db.prepare("DELETE FROM messages WHERE id = ?").run(id("indexed second bravo"));
    db.prepare("DELETE FROM messages WHERE id = ?").run(id("pending fourth delta"));
    db.prepare("UPDATE messages SET role = 'tool' WHERE id = ?").run(id("indexed first echo"));
    checkIndex(db);
    for (const gone of ["alpha", "bravo", "charlie", "delta", "echo"]) expect(await found(memory, gone)).toEqual([]);
    expect(await found(memory, "foxtrot")).toEqual(["pending third «foxtrot»"]);
    checkIndex(db);
  });

  it("survives a restart with marks left, and retention deleting marked and indexed messages", async () => {
    const dir = mkdtempSync(join(tmpdir(), "pincer-fts-"));
    try {
      let db = openDatabase(join(dir, "p.db"));
      const old = Date.now() - 100 * DAY;
      await openSqliteStore(db).conversations.append("s", [{ role: "user", content: "kept across restart golf" }]);
      await openSqliteStore(db).conversations.append("gone", [{ role: "user", content: "old hotel", createdAt: old }]);
      await openSqliteStore(db).memory.indexPending();
      await openSqliteStore(db).conversations.append("gone", [
        { role: "assistant", content: "old india", createdAt: old },
      ]);
      db.prepare("UPDATE conversations SET archived_at = ? WHERE session_key = 'gone'").run(old);
      closeDatabase(db);
      db = openDatabase(join(dir, "p.db"));
      const ages = { auditDays: 30, archivedConversationDays: 90, deadLetterDays: 30, mediaDays: 30, usageDays: 400 };
      expect(await openSqliteStore(db).retention.prune(ages)).toMatchObject({ messages: 2 });
      checkIndex(db);
      expect(await found(openSqliteStore(db).memory, "golf")).toEqual(["kept across restart «golf»"]);
      checkIndex(db);
      closeDatabase(db);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("leaves messages indexed before the migration searchable", async () => {
    const before = migrations.filter((m) => m.id !== "011-fts-deferred");
    const dir = mkdtempSync(join(tmpdir(), "pincer-fts-"));
    try {
      let db = openDatabase(join(dir, "p.db"), before);
      await openSqliteStore(db).conversations.append("s", [{ role: "user", content: "from the old schema juliett" }]);
      closeDatabase(db);
      db = openDatabase(join(dir, "p.db"));
      expect(pending(db)).toBe(0);
      expect(await found(openSqliteStore(db).memory, "juliett")).toEqual(["from the old schema «juliett»"]);
      db.prepare("DELETE FROM messages").run();
      checkIndex(db);
      closeDatabase(db);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
