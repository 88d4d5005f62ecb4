import { rmSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { tempHome } from "../../test/helpers/app.js";
import { HistoryCache, pickNewest } from "./history-cache.js";
import { openSqliteStore } from "./sqlite/sqlite-store.js";
import type { StoredMessage } from "./types.js";

const homes: string[] = [];
afterEach(() => {
  for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true });
});

function open() {
  const home = tempHome("pincer-history-");
  homes.push(home);
  const file = join(home, "pincer.db");
  return { file, store: openSqliteStore(file) };
}

/** What the history must be, read straight from the file: every message after the trim point, walked newest first. */
function expected(file: string, sessionKey: string, budget: number): Array<string | null> {
  const db = new Database(file, { readonly: true });
  try {
    const rows = db
      .prepare(
        `SELECT m.role, m.content, m.tokens FROM messages m JOIN conversations c ON c.id = m.conversation_id
          WHERE c.session_key = ? AND c.archived_at IS NULL AND m.id > c.trimmed_through ORDER BY m.id DESC`,
      )
      .all(sessionKey) as Array<{ role: string; content: string | null; tokens: number }>;
    const picked: typeof rows = [];
    let used = 0;
    for (const row of rows) {
      if (used + row.tokens > budget) break;
      used += row.tokens;
      picked.unshift(row);
    }
    const first = picked.findIndex((r) => r.role === "user");
    return first === -1 ? [] : picked.slice(first).map((r) => r.content);
  } finally {
    db.close();
  }
}

const say = (role: "user" | "assistant", text: string): StoredMessage => ({ role, content: text });

describe("the history a turn reads, from the cache of recent conversations", () => {
  it("is what the database holds after appends from this and another connection, any budget, trim point and /new", async () => {
    const { file, store } = open();
    const other = openSqliteStore(file);
    try {
      const budgets = [0, 30, 200, 1_000, 5_000, Number.MAX_SAFE_INTEGER];
      let seed = 7;
      const next = () => {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        return seed;
      };
      for (let round = 0; round < 120; round++) {
        const writer = next() % 4 === 0 ? other : store;
        const long = next() % 10 === 0 ? "x".repeat(next() % 4_000) : "";
        await writer.conversations.append("a", [say("user", `u${round}${long}`), say("assistant", `a${round}`)]);
        if (round === 40 || round === 90) {
          const id = (await store.memory.openConversation("a")) as number;
          const pending = await store.memory.pending(id, 0, 30);
          const through = pending[pending.length - 1];
          await other.conversations.trim(id, { trimmedThrough: through.id, summariesThrough: 0, memory: null });
        }
        if (round === 70) await other.conversations.archive("a");
        for (const budget of [budgets[next() % budgets.length], budgets[next() % budgets.length]]) {
          const got = await store.conversations.recent("a", budget);
          expect(got.map((m) => m.content)).toEqual(expected(file, "a", budget));
        }
      }
    } finally {
      await other.close();
      await store.close();
    }
  });

  it("forgets a pruned conversation whose id a new one is given again", async () => {
    const { file, store } = open();
    try {
      await store.conversations.append("a", [say("user", "before /new"), say("assistant", "old reply")]);
      expect((await store.conversations.recent("a", 1_000)).map((m) => m.content)).toEqual([
        "before /new",
        "old reply",
      ]);
      const id = await store.memory.openConversation("a");
      await store.conversations.archive("a");
      await store.retention.prune(
        { auditDays: 1, archivedConversationDays: 1, deadLetterDays: 1, usageDays: 32 },
        Date.now() + 3 * 86_400_000,
      );
      await store.conversations.append("a", [say("user", "after")]);
      expect(await store.memory.openConversation("a")).toBe(id);
      expect((await store.conversations.recent("a", 1_000)).map((m) => m.content)).toEqual(["after"]);
      expect(expected(file, "a", 1_000)).toEqual(["after"]);
    } finally {
      await store.close();
    }
  });
});

describe("the cache's bounds", () => {
  const head = (id: number) => ({ id, sessionKey: `s${id}`, createdAt: 1, through: 0 });
  const rows = (n: number, tokens: number) =>
    Array.from({ length: n }, (_, i) => ({
      id: i + 1,
      message: { role: "user" as const, content: `m${i + 1}`, tokens },
    }));

  it("keeps the conversations read most recently, and of each only what the budget could use again", () => {
    const cache = new HistoryCache();
    for (let id = 1; id <= 32; id++) cache.store(head(id), rows(3, 10), true, 100);
    expect(cache.lookup(head(1))).toBeDefined();
    cache.store(head(33), rows(3, 10), true, 100);
    expect(cache.lookup(head(2))).toBeUndefined();
    expect(cache.lookup(head(1))).toBeDefined();
    expect(cache.lookup(head(3))).toBeDefined();
    cache.store(head(4), rows(20, 10), true, 40);
    const kept = cache.lookup(head(4));
    expect(kept?.rows.map((r) => r.id)).toEqual([16, 17, 18, 19, 20]);
    expect(kept?.complete).toBe(false);
  });

  it("sends a walk that runs out of a trimmed cache to the database, never a shorter history", () => {
    const held = rows(5, 10).slice(2);
    expect(pickNewest(held, false, 25)?.rows.map((r) => r.message.content)).toEqual(["m4", "m5"]);
    expect(pickNewest(held, false, 25)?.complete).toBe(false);
    expect(pickNewest(held, false, 30)).toBeUndefined();
    expect(pickNewest(held, true, 30)?.rows.map((r) => r.message.content)).toEqual(["m3", "m4", "m5"]);
    expect(pickNewest(held, true, 30)?.complete).toBe(true);
  });

  it("drops rows consolidated since, and forgets a conversation whose watermark went back or whose id came back", () => {
    const cache = new HistoryCache();
    cache.store(head(1), rows(5, 10), true, 100);
    expect(cache.lookup({ ...head(1), through: 3 })?.rows.map((r) => r.id)).toEqual([4, 5]);
    expect(cache.lookup(head(1))).toBeUndefined();
    cache.store(head(1), rows(5, 10), true, 100);
    expect(cache.lookup({ ...head(1), createdAt: 2 })).toBeUndefined();
  });
});
