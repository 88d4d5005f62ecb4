import type pg from "pg";
import { buildFtsQuery, likePattern, makeSnippet } from "../sqlite/fts-query.js";
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
import { openConversation } from "./conversations.js";
import { scalar, transaction } from "./db.js";

const UNCONSOLIDATED =
  "FROM messages m JOIN conversations c ON c.id = m.conversation_id WHERE c.id = $1 AND m.id > c.consolidated_through";

/**
 * Consolidation's bookkeeping and search on PostgreSQL: the same terms as SQLite's trigram index
 * (pg_trgm's GIN indexes answer them, CJK included), ranked by how many terms a text holds and
 * then by PostgreSQL's own full-text rank of its words.
 */
export class PostgresMemory implements MemoryStore {
  constructor(private readonly pool: pg.Pool) {}

  openConversation(sessionKey: string): Promise<number | undefined> {
    return openConversation(this.pool, sessionKey);
  }

  async archivedWithPending(sessionKey: string): Promise<number[]> {
    const { rows } = await this.pool.query<{ id: number }>(
      `SELECT c.id FROM conversations c WHERE c.session_key = $1 AND c.archived_at IS NOT NULL
         AND EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.id AND m.id > c.consolidated_through)
       ORDER BY c.id`,
      [sessionKey],
    );
    return rows.map((row) => row.id);
  }

  async pendingTokens(conversationId: number): Promise<number> {
    return (
      (await scalar<number>(this.pool, `SELECT coalesce(sum(m.tokens), 0)::bigint ${UNCONSOLIDATED}`, [
        conversationId,
      ])) ?? 0
    );
  }

  async pending(conversationId: number, maxTokens: number, minRows = 1): Promise<PendingMessage[]> {
    const { rows } = await this.pool.query<{
      id: number;
      role: StoredRole;
      content: string | null;
      tool_calls: string | null;
      tokens: number;
      created_at: number;
    }>(
      `SELECT id, role, content, tool_calls, tokens, created_at FROM (
         SELECT m.*, sum(m.tokens) OVER (ORDER BY m.id) AS used, row_number() OVER (ORDER BY m.id) AS n ${UNCONSOLIDATED}
       ) t WHERE n <= $2 OR used <= $3 ORDER BY id`,
      [conversationId, minRows, maxTokens],
    );
    return rows.map((row) => ({
      id: row.id,
      role: row.role,
      content: row.content,
      toolCalls: row.tool_calls ? (JSON.parse(row.tool_calls) as ToolCallRecord[]) : undefined,
      tokens: row.tokens,
      createdAt: row.created_at,
    }));
  }

  addEntry(entry: NewEntry): Promise<boolean> {
    return transaction(this.pool, async (tx) => {
      // The conditional update takes the row lock: a second run waits here, then finds it moved.
      const { rowCount } = await tx.query(
        "UPDATE conversations SET consolidated_through = $1 WHERE id = $2 AND consolidated_through < $3",
        [entry.throughId, entry.conversationId, entry.firstId],
      );
      if (rowCount === 0) return false;
      await tx.query(
        `INSERT INTO memory_entries (session_key, conversation_id, first_message_id, last_message_id, period_start,
           period_end, text, tokens, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
        [
          entry.sessionKey,
          entry.conversationId,
          entry.firstId,
          entry.throughId,
          entry.periodStart,
          entry.periodEnd,
          entry.text,
          entry.tokens,
          Date.now(),
        ],
      );
      return true;
    });
  }

  async recentEntries(conversationId: number, tokenBudget: number): Promise<MemoryEntry[]> {
    const { rows } = await this.pool.query<MemoryEntry>(
      `SELECT id, period_start AS "periodStart", period_end AS "periodEnd", text, tokens FROM (
         SELECT e.*, sum(tokens) OVER (ORDER BY id DESC) AS used FROM memory_entries e WHERE conversation_id = $1
       ) t WHERE used <= $2 ORDER BY id`,
      [conversationId, tokenBudget],
    );
    return rows;
  }

  async entryCount(sessionKey: string): Promise<number> {
    return (
      (await scalar<number>(this.pool, "SELECT count(*) FROM memory_entries WHERE session_key = $1", [sessionKey])) ?? 0
    );
  }

  async syncMemoryFile(hash: string, modifiedAt: number, paragraphs: string[]): Promise<void> {
    const current = await scalar<string>(this.pool, "SELECT hash FROM memory_file_state WHERE id = 1");
    if (current === hash) return;
    await transaction(this.pool, async (tx) => {
      // Two processes syncing the same new file at once: the second waits, then replaces the same rows.
      await tx.query("LOCK TABLE memory_file_paragraphs IN EXCLUSIVE MODE");
      await tx.query("DELETE FROM memory_file_paragraphs");
      await tx.query("INSERT INTO memory_file_paragraphs (text) SELECT * FROM unnest($1::text[])", [paragraphs]);
      await tx.query(
        `INSERT INTO memory_file_state (id, hash, modified_at) VALUES (1, $1, $2)
         ON CONFLICT (id) DO UPDATE SET hash = excluded.hash, modified_at = excluded.modified_at`,
        [hash, modifiedAt],
      );
    });
  }

  async search(query: string, scope: SearchScope): Promise<SearchHit[]> {
    const fts = buildFtsQuery(query);
    const terms = [...new Set([...fts.terms, ...fts.short])];
    if (terms.length === 0) return [];
    const patterns = terms.map(likePattern);
    // $1 session, $2 MEMORY.md allowed, $3 limit, $4 the words for the full-text rank, $5… the patterns.
    const hits = (column: string) => patterns.map((_, i) => `(${column} ILIKE $${i + 5})::int`).join(" + ");
    const any = (column: string) => patterns.map((_, i) => `${column} ILIKE $${i + 5}`).join(" OR ");
    const rank = (column: string) => `ts_rank(to_tsvector('simple', ${column}), websearch_to_tsquery('simple', $4))`;
    const { rows } = await this.pool.query<{
      kind: SearchHit["kind"];
      role: StoredRole | null;
      at: number;
      text: string;
    }>(
      `SELECT kind, role, at, text FROM (
         SELECT 'message' AS kind, m.id, m.role, m.created_at AS at, m.content AS text,
                ${hits("m.content")} AS score, ${rank("m.content")} AS rank
           FROM messages m JOIN conversations c ON c.id = m.conversation_id
          WHERE c.session_key = $1 AND m.role IN ('user', 'assistant') AND (${any("m.content")})
         UNION ALL
         SELECT 'entry', e.id, NULL, e.period_end, e.text, ${hits("e.text")}, ${rank("e.text")}
           FROM memory_entries e WHERE e.session_key = $1 AND (${any("e.text")})
         UNION ALL
         SELECT 'memory', p.id, NULL, (SELECT modified_at FROM memory_file_state WHERE id = 1), p.text,
                ${hits("p.text")}, ${rank("p.text")}
           FROM memory_file_paragraphs p WHERE $2 AND (${any("p.text")})
       ) found ORDER BY score DESC, rank DESC, at DESC, id DESC LIMIT $3`,
      [scope.sessionKey, scope.memoryFile, scope.limit, terms.join(" or "), ...patterns],
    );
    return rows.map((row) => ({
      kind: row.kind,
      role: row.role ?? undefined,
      at: row.at,
      snippet: makeSnippet(row.text, fts.terms),
    }));
  }

  /** PostgreSQL keeps its indexes as rows are written: nothing waits to be indexed. */
  async indexPending(): Promise<number> {
    return 0;
  }
}
