import { existsSync, mkdirSync, mkdtempSync, statSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { pruneMediaFiles } from "./retention.js";
import { closeDatabase, openDatabase } from "./sqlite/database.js";
import { openSqliteStore } from "./sqlite/sqlite-store.js";

const DAY = 24 * 60 * 60 * 1000;
const ages = {
  auditDays: 30,
  archivedConversationDays: 90,
  deadLetterDays: 30,
  mediaDays: 30,
  usageDays: 400,
  jobRunDays: 60,
};

describe("retention", () => {
  it("prunes old audit rows, old archived conversations and old dead letters, and nothing else", async () => {
    const now = Date.now();
    const db = openDatabase(":memory:");
    const audit = db.prepare(
      "INSERT INTO tool_audit (session_key, tool, arguments, result, ok, duration_ms, created_at) VALUES ('s', 'exec', '{}', 'ok', 1, 1, ?)",
    );
    audit.run(now - 31 * DAY);
    audit.run(now - 29 * DAY);
    const conversations = openSqliteStore(db).conversations;
    await conversations.append("old", [{ role: "user", content: "long ago" }]);
    await conversations.archive("old");
    db.prepare("UPDATE conversations SET archived_at = ? WHERE session_key = 'old'").run(now - 91 * DAY);
    await conversations.append("recent", [{ role: "user", content: "last month" }]);
    await conversations.archive("recent");
    // An open conversation is kept however old it is.
    await conversations.append("open", [{ role: "user", content: "still talking", createdAt: now - 400 * DAY }]);
    const journal = openSqliteStore(db).journal;
    const old = await journal.recordOutbound({ channel: "telegram", chatId: "1", text: "gone", kind: "reply" });
    const young = await journal.recordOutbound({ channel: "telegram", chatId: "1", text: "kept", kind: "reply" });
    await journal.recordOutbound({ channel: "telegram", chatId: "2", text: "pending", kind: "reply" });
    await journal.deadLetterOutbound(old, "refused");
    await journal.deadLetterOutbound(young, "refused");
    db.prepare("UPDATE outbox SET finished_at = ? WHERE id = ?").run(now - 31 * DAY, old);
    const runs = openSqliteStore(db).jobRuns;
    const run = { jobId: "j1", sessionKey: "s", trigger: "schedule", outcome: "ok", promptTokens: 1 } as const;
    for (const [id, age] of [
      ["old-run", 61],
      ["young-run", 59],
    ] as const) {
      const firedAt = now - age * DAY;
      await runs.record({ ...run, id, scheduledAt: firedAt, firedAt, completionTokens: 1, toolCalls: 0 });
    }

    expect(await openSqliteStore(db).retention.prune(ages, now)).toEqual({
      auditRows: 1,
      conversations: 1,
      messages: 1,
      deadLetters: 1,
      usageRows: 0,
      jobRuns: 1,
    });
    expect([...(await runs.recent(["j1"])).values()].flat().map((r) => r.id)).toEqual(["young-run"]);
    expect(await openSqliteStore(db).status.summary()).toMatchObject({
      toolCalls: 1,
      deadLetters: 1,
      pendingOutbound: 1,
      messages: 2,
    });
    expect((await conversations.recent("open", 1000)).map((m) => m.content)).toEqual(["still talking"]);
    expect(await openSqliteStore(db).retention.prune(ages, now)).toEqual({
      auditRows: 0,
      conversations: 0,
      messages: 0,
      deadLetters: 0,
      usageRows: 0,
      jobRuns: 0,
    });
  });

  it("deletes media files older than mediaDays and the folders left empty, never following a symlink", async () => {
    const dir = mkdtempSync(join(tmpdir(), "pincer-media-"));
    const outside = mkdtempSync(join(tmpdir(), "pincer-outside-"));
    writeFileSync(join(outside, "precious.txt"), "keep me");
    const old = Date.now() / 1000 - 40 * 24 * 3600;
    mkdirSync(join(dir, "outgoing", "abc"), { recursive: true });
    writeFileSync(join(dir, "outgoing", "abc", "sent.png"), "x");
    writeFileSync(join(dir, "photo-old.jpg"), "x");
    writeFileSync(join(dir, "photo-new.jpg"), "x");
    utimesSync(join(dir, "outgoing", "abc", "sent.png"), old, old);
    utimesSync(join(dir, "photo-old.jpg"), old, old);
    symlinkSync(outside, join(dir, "link"));
    mkdirSync(join(dir, "incoming"));
    expect(await pruneMediaFiles(dir, 30)).toBe(2);
    expect(existsSync(join(dir, "photo-new.jpg"))).toBe(true);
    expect(existsSync(join(dir, "photo-old.jpg"))).toBe(false);
    expect(existsSync(join(outside, "precious.txt"))).toBe(true);
    // Folders changed in the last hour stay (a download may be about to open its file in one); later they go.
    expect(existsSync(join(dir, "outgoing"))).toBe(true);
    expect(existsSync(join(dir, "incoming"))).toBe(true);
    expect(await pruneMediaFiles(dir, 30, Date.now() + 2 * 3600_000)).toBe(0);
    expect(existsSync(join(dir, "outgoing"))).toBe(false);
    expect(existsSync(join(dir, "incoming"))).toBe(false);
  });

  it("optimizes and folds the write-ahead log into the file on close", async () => {
    const dir = mkdtempSync(join(tmpdir(), "pincer-close-"));
    const db = openDatabase(join(dir, "pincer.db"));
    await openSqliteStore(db).conversations.append("a", [{ role: "user", content: "x".repeat(100_000) }]);
    expect(statSync(join(dir, "pincer.db-wal")).size).toBeGreaterThan(0);
    closeDatabase(db);
    expect(existsSync(join(dir, "pincer.db-wal")) ? statSync(join(dir, "pincer.db-wal")).size : 0).toBe(0);
    closeDatabase(db);
  });
});
