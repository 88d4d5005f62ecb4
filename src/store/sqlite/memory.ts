import type {
  MemoryEntry,
  MemoryStore,
  NewEntry,
  PendingMessage,
  SearchHit,
  SearchScope,
  StoredRole,
  ToolCallRecord,
} from "../store.js";
import { findOpenConversation } from "./conversations.js";
import type { Database } from "./database.js";
import { buildFtsQuery, likePattern, makeSnippet } from "./fts-query.js";

/** `snippet` holds the whole text until makeSnippet cuts it. */
interface Row {
  kind: SearchHit["kind"];
  id: number;
  role: StoredRole | null;
  at: number;
  snippet: string;
}

/** Consolidation's bookkeeping and the full-text index over memory (FTS5, trigram), in SQLite. */
export class SqliteMemory implements MemoryStore {
  constructor(private readonly db: Database) {}

  /** The session's open conversation, if it has one (never creates it). */
  async openConversation(sessionKey: string): Promise<number | undefined> {
    return findOpenConversation(this.db, sessionKey);
  }

  /** Archived conversations of the session that still have turns to consolidate (after /new). */
  async archivedWithPending(sessionKey: string): Promise<number[]> {
    return this.db
      .prepare(
        `SELECT c.id FROM conversations c WHERE c.session_key = ? AND c.archived_at IS NOT NULL
           AND EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.id AND m.id > c.consolidated_through)`,
      )
      .pluck()
      .all(sessionKey) as number[];
  }

  /** Tokens of the messages still in the prompt's history (not consolidated). */
  async pendingTokens(conversationId: number): Promise<number> {
    return this.db
      .prepare(
        `SELECT coalesce(sum(tokens), 0) FROM messages
          WHERE conversation_id = ? AND id > (SELECT consolidated_through FROM conversations WHERE id = ?)`,
      )
      .pluck()
      .get(conversationId, conversationId) as number;
  }

  /** The oldest unconsolidated messages, in order, until `maxTokens` is passed (at least `minRows`). */
  async pending(conversationId: number, maxTokens: number, minRows = 1): Promise<PendingMessage[]> {
    const rows = this.db
      .prepare(
        `SELECT id, role, content, tool_calls, tokens, created_at FROM messages
          WHERE conversation_id = ? AND id > (SELECT consolidated_through FROM conversations WHERE id = ?)
          ORDER BY id`,
      )
      .iterate(conversationId, conversationId) as IterableIterator<{
      id: number;
      role: StoredRole;
      content: string | null;
      tool_calls: string | null;
      tokens: number;
      created_at: number;
    }>;
    const out: PendingMessage[] = [];
    let used = 0;
    for (const row of rows) {
      if (out.length >= minRows && used + row.tokens > maxTokens) break;
      used += row.tokens;
      out.push({
        id: row.id,
        role: row.role,
        content: row.content,
        toolCalls: row.tool_calls ? (JSON.parse(row.tool_calls) as ToolCallRecord[]) : undefined,
        tokens: row.tokens,
        createdAt: row.created_at,
      });
    }
    if (typeof rows.return === "function") rows.return();
    return out;
  }

  /**
   * Stores the entry and moves the conversation's watermark past the messages it covers, in one
   * transaction: a crash leaves either both or neither. Returns false (and stores nothing) when
   * another run consolidated these messages first.
   */
  async addEntry(entry: NewEntry): Promise<boolean> {
    return this.db.transaction(() => {
      const moved = this.db
        .prepare("UPDATE conversations SET consolidated_through = ? WHERE id = ? AND consolidated_through < ?")
        .run(entry.throughId, entry.conversationId, entry.firstId).changes;
      if (moved === 0) return false;
      this.db
        .prepare(
          `INSERT INTO memory_entries (session_key, conversation_id, first_message_id, last_message_id, period_start,
             period_end, text, tokens, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(
          entry.sessionKey,
          entry.conversationId,
          entry.firstId,
          entry.throughId,
          entry.periodStart,
          entry.periodEnd,
          entry.text,
          entry.tokens,
          Date.now(),
        );
      return true;
    })();
  }

  /** The conversation's newest entries that fit in `tokenBudget`, oldest first. */
  async recentEntries(conversationId: number, tokenBudget: number): Promise<MemoryEntry[]> {
    const rows = this.db
      .prepare(
        `SELECT id, period_start AS periodStart, period_end AS periodEnd, text, tokens FROM memory_entries
          WHERE conversation_id = ? ORDER BY id DESC`,
      )
      .iterate(conversationId) as IterableIterator<MemoryEntry>;
    const out: MemoryEntry[] = [];
    let used = 0;
    for (const row of rows) {
      if (used + row.tokens > tokenBudget) break;
      used += row.tokens;
      out.push(row);
    }
    if (typeof rows.return === "function") rows.return();
    return out.reverse();
  }

  async entryCount(sessionKey: string): Promise<number> {
    return this.db
      .prepare("SELECT count(*) FROM memory_entries WHERE session_key = ?")
      .pluck()
      .get(sessionKey) as number;
  }

  /** Re-indexes MEMORY.md's paragraphs when the file changed since the last time. */
  async syncMemoryFile(hash: string, modifiedAt: number, paragraphs: string[]): Promise<void> {
    const current = this.db.prepare("SELECT hash FROM memory_file_state WHERE id = 1").pluck().get() as
      | string
      | undefined;
    if (current === hash) return;
    this.db.transaction(() => {
      this.db.prepare("DELETE FROM memory_file_fts").run();
      const insert = this.db.prepare("INSERT INTO memory_file_fts (text) VALUES (?)");
      for (const p of paragraphs) insert.run(p);
      this.db
        .prepare(
          "INSERT INTO memory_file_state (id, hash, modified_at) VALUES (1, ?, ?) ON CONFLICT (id) DO UPDATE SET hash = excluded.hash, modified_at = excluded.modified_at",
        )
        .run(hash, modifiedAt);
    })();
  }

  /**
   * BM25-ranked hits for `query` in what the session may see: its own messages (every
   * conversation it had, also before /new), its memory entries, and MEMORY.md if allowed.
   * Queries of only one- or two-character terms (too short for trigrams) scan with LIKE, newest first.
   */
  async search(query: string, scope: SearchScope): Promise<SearchHit[]> {
    this.indexNow();
    const fts = buildFtsQuery(query);
    const params = { session: scope.sessionKey, memoryFile: scope.memoryFile ? 1 : 0, limit: scope.limit };
    const rows: Row[] = fts.match ? this.matchRows(fts.match, params) : [];
    if (rows.length < scope.limit && fts.short.length > 0) {
      const seen = new Set(rows.map((r) => `${r.kind}:${r.id}`));
      for (const row of this.likeRows(fts.short, params)) {
        if (rows.length >= scope.limit) break;
        if (!seen.has(`${row.kind}:${row.id}`)) rows.push(row);
      }
    }
    return rows.map((r) => ({
      kind: r.kind,
      role: r.role ?? undefined,
      at: r.at,
      snippet: makeSnippet(r.snippet, fts.terms),
    }));
  }

  /**
   * Adds the messages stored since the last call to the search index, in one transaction
   * (a turn only marks its messages; see migration 16-fts-deferred). Returns how many.
   */
  async indexPending(): Promise<number> {
    return this.indexNow();
  }

  private indexNow(): number {
    if (this.db.prepare("SELECT 1 FROM messages_fts_pending LIMIT 1").get() === undefined) return 0;
    return this.db.transaction(() => {
      const indexed = this.db
        .prepare(
          "INSERT INTO messages_fts (rowid, content) SELECT m.id, m.content FROM messages_fts_pending p JOIN messages m ON m.id = p.id",
        )
        .run().changes;
      this.db.prepare("DELETE FROM messages_fts_pending").run();
      return indexed;
    })();
  }

  private matchRows(match: string, params: { session: string; memoryFile: number; limit: number }): Row[] {
    return this.db
      .prepare(
        `SELECT * FROM (
           SELECT 'message' AS kind, m.id AS id, m.role AS role, m.created_at AS at,
                  m.content AS snippet, bm25(messages_fts) AS score
             FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid
             JOIN conversations c ON c.id = m.conversation_id
            WHERE messages_fts MATCH @match AND c.session_key = @session
           UNION ALL
           SELECT 'entry', e.id, NULL, e.period_end, e.text, bm25(entries_fts)
             FROM entries_fts JOIN memory_entries e ON e.id = entries_fts.rowid
            WHERE entries_fts MATCH @match AND e.session_key = @session
           UNION ALL
           SELECT 'memory', rowid, NULL, (SELECT modified_at FROM memory_file_state WHERE id = 1),
                  text, bm25(memory_file_fts)
             FROM memory_file_fts WHERE @memoryFile = 1 AND memory_file_fts MATCH @match
         ) ORDER BY score, at DESC LIMIT @limit`,
      )
      .all({ ...params, match }) as Row[];
  }

  /** A scan for terms too short for trigrams, best first by how many of them a text contains. */
  private likeRows(terms: string[], params: { session: string; memoryFile: number; limit: number }): Row[] {
    const values: Record<string, unknown> = { ...params };
    terms.forEach((term, i) => {
      values[`p${i}`] = likePattern(term);
    });
    const hits = (column: string) => terms.map((_, i) => `(${column} LIKE @p${i} ESCAPE '\\')`).join(" + ");
    return this.db
      .prepare(
        `SELECT * FROM (
           SELECT 'message' AS kind, m.id AS id, m.role AS role, m.created_at AS at,
                  m.content AS snippet, ${hits("m.content")} AS score
             FROM messages m JOIN conversations c ON c.id = m.conversation_id
            WHERE c.session_key = @session AND m.role IN ('user', 'assistant') AND m.content IS NOT NULL
           UNION ALL
           SELECT 'entry', e.id, NULL, e.period_end, e.text, ${hits("e.text")}
             FROM memory_entries e WHERE e.session_key = @session
           UNION ALL
           SELECT 'memory', rowid, NULL, (SELECT modified_at FROM memory_file_state WHERE id = 1),
                  text, ${hits("text")}
             FROM memory_file_fts WHERE @memoryFile = 1
         ) WHERE score > 0 ORDER BY score DESC, at DESC LIMIT @limit`,
      )
      .all(values) as Row[];
  }
}
