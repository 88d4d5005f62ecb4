import { openConversation } from "./conversations.js";
import { type Sql, scalar } from "./sql.js";
import type {
  MemoryEntry,
  NewEntry,
  PendingMessage,
  SearchHit,
  SearchScope,
  StoredRole,
  ToolCallRecord,
} from "./types.js";

const UNCONSOLIDATED =
  "FROM messages WHERE conversation_id = $1 AND id > (SELECT consolidated_through FROM conversations WHERE id = $1)";

/**
 * Consolidation's bookkeeping; each engine adds its own full-text index over memory (SQLite's
 * FTS5, PostgreSQL's pg_trgm).
 */
export abstract class SqlMemory {
  constructor(protected readonly db: Sql) {}

  /** Re-indexes MEMORY.md's paragraphs when the file changed since the last time. */
  abstract syncMemoryFile(hash: string, modifiedAt: number, paragraphs: string[]): Promise<void>;
  /**
   * Ranked hits for `query` in what the session may see: its own messages (every conversation it
   * had, also before /new), its memory entries, and MEMORY.md if allowed. Any script, CJK too.
   */
  abstract search(query: string, scope: SearchScope): Promise<SearchHit[]>;
  /** Indexes messages stored since the last call for search (turns only mark them). Returns how many. */
  abstract indexPending(): Promise<number>;

  /** The session's open conversation, if it has one (never creates it). */
  openConversation(sessionKey: string): Promise<number | undefined> {
    return openConversation(this.db, sessionKey);
  }

  /** Archived conversations of the session that still have turns to consolidate (after /new). */
  async archivedWithPending(sessionKey: string): Promise<number[]> {
    const rows = await this.db.rows<{ id: number }>(
      `SELECT c.id FROM conversations c WHERE c.session_key = $1 AND c.archived_at IS NOT NULL
         AND EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.id AND m.id > c.consolidated_through)
       ORDER BY c.id`,
      [sessionKey],
    );
    return rows.map((row) => row.id);
  }

  /** Tokens of the messages still in the prompt's history (not consolidated). */
  async pendingTokens(conversationId: number): Promise<number> {
    return (await scalar<number>(this.db, `SELECT coalesce(sum(tokens), 0) ${UNCONSOLIDATED}`, [conversationId])) ?? 0;
  }

  /** The oldest unconsolidated messages, in order, until `maxTokens` is passed (at least `minRows`). */
  async pending(conversationId: number, maxTokens: number, minRows = 1): Promise<PendingMessage[]> {
    const rows = await this.db.budgeted<{
      id: number;
      role: StoredRole;
      content: string | null;
      tool_calls: string | null;
      tokens: number;
      created_at: number;
    }>(
      `SELECT id, role, content, tool_calls, tokens, created_at ${UNCONSOLIDATED}`,
      "id",
      [conversationId],
      maxTokens,
      minRows,
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

  /**
   * Stores the entry and moves the conversation's watermark past the messages it covers, all or
   * nothing. False (and nothing stored) when another run consolidated these messages first.
   */
  addEntry(entry: NewEntry): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      // The conditional update takes the row lock: a second run waits here, then finds it moved.
      const moved = await tx.run(
        "UPDATE conversations SET consolidated_through = $1 WHERE id = $2 AND consolidated_through < $3",
        [entry.throughId, entry.conversationId, entry.firstId],
      );
      if (moved === 0) return false;
      await tx.run(
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

  /** The conversation's newest entries that fit in `tokenBudget`, oldest first. */
  async recentEntries(conversationId: number, tokenBudget: number): Promise<MemoryEntry[]> {
    const rows = await this.db.budgeted<{
      id: number;
      period_start: number;
      period_end: number;
      text: string;
      tokens: number;
    }>(
      "SELECT id, period_start, period_end, text, tokens FROM memory_entries WHERE conversation_id = $1",
      "id DESC",
      [conversationId],
      tokenBudget,
    );
    return rows.reverse().map((row) => ({
      id: row.id,
      periodStart: row.period_start,
      periodEnd: row.period_end,
      text: row.text,
      tokens: row.tokens,
    }));
  }

  async entryCount(sessionKey: string): Promise<number> {
    return (
      (await scalar<number>(this.db, "SELECT count(*) FROM memory_entries WHERE session_key = $1", [sessionKey])) ?? 0
    );
  }
}
