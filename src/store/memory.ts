import { openConversation, parseCalls } from "./conversations.js";
import { columns, insert, SqlGroup, scalar, total, upsert } from "./sql.js";
import { makeSnippet } from "./sqlite/fts-query.js";
import type { MemoryEntry, NewEntry, PendingMessage, SearchHit, SearchScope } from "./types.js";

const ENTRY_FIELDS = ["sessionKey", "conversationId", "periodStart", "periodEnd", "text", "tokens"] as const;
const UNCONSOLIDATED =
  "FROM messages WHERE conversation_id = $1 AND id > (SELECT consolidated_through FROM conversations WHERE id = $1)";

/** A search's row, `text` whole until makeSnippet cuts it. */
export type FoundRow = Omit<SearchHit, "role" | "snippet"> & {
  id: number;
  role: SearchHit["role"] | null;
  text: string;
};

/** Consolidation's bookkeeping; each engine adds its own full-text index over memory (FTS5, pg_trgm). */
export abstract class SqlMemory extends SqlGroup {
  /** Ranked hits, any script, in what the session may see: its messages (also before /new), entries, MEMORY.md. */
  abstract search(query: string, scope: SearchScope): Promise<SearchHit[]>;

  protected hits(rows: FoundRow[], terms: string[]): SearchHit[] {
    return rows.map((row) => ({
      kind: row.kind,
      role: row.role ?? undefined,
      at: row.at,
      snippet: makeSnippet(row.text, terms),
    }));
  }

  /** Indexes messages stored since the last call for search; PostgreSQL indexes rows as they are written (0 here). */
  async indexPending(): Promise<number> {
    return 0;
  }

  /** Re-indexes an agent's MEMORY.md's paragraphs when the file changed since the last time. */
  async syncMemoryFile(agent: string, hash: string, modifiedAt: number, paragraphs: string[]): Promise<void> {
    if ((await scalar<string>(this.db, "SELECT hash FROM memory_file_state WHERE agent = $1", [agent])) === hash)
      return;
    const table = this.db.engine === "sqlite" ? "memory_file_fts" : "memory_file_paragraphs";
    await this.db.transaction(async (tx) => {
      // Two processes syncing the same new file at once (PostgreSQL): the second waits, then replaces the same rows.
      if (tx.engine === "postgres") await tx.run(`LOCK TABLE ${table} IN EXCLUSIVE MODE`);
      await tx.run(`DELETE FROM ${table} WHERE agent = $1`, [agent]);
      for (const p of paragraphs) await tx.run(`INSERT INTO ${table} (text, agent) VALUES ($1, $2)`, [p, agent]);
      await tx.run(...upsert("memory_file_state", { agent, hash, modifiedAt }, ["agent"]));
    });
  }

  openConversation = (sessionKey: string) => openConversation(this.db, sessionKey);

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
  pendingTokens = (conversationId: number) =>
    total(this.db, `SELECT coalesce(sum(tokens), 0) ${UNCONSOLIDATED}`, [conversationId]);

  /** The oldest unconsolidated messages, in order, until `maxTokens` is passed (at least `minRows`). */
  async pending(conversationId: number, maxTokens: number, minRows = 1): Promise<PendingMessage[]> {
    const rows = await this.db.budgeted<Omit<PendingMessage, "toolCalls"> & { calls: string | null }>(
      `SELECT id, role, content, tool_calls AS calls, tokens, created_at AS "createdAt" ${UNCONSOLIDATED}`,
      "id",
      [conversationId],
      maxTokens,
      minRows,
    );
    return rows.map(({ calls, ...row }) => ({ ...row, toolCalls: parseCalls(calls) }));
  }

  /** Stores the entry and moves the watermark past it, all or nothing; false when another run consolidated first. */
  addEntry(entry: NewEntry): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      // The conditional update takes the row lock: a second run waits here, then finds it moved.
      const moved = await tx.run(
        "UPDATE conversations SET consolidated_through = $1 WHERE id = $2 AND consolidated_through < $3",
        [entry.throughId, entry.conversationId, entry.firstId],
      );
      if (moved === 0) return false;
      const { throughId, firstId, ...rest } = entry;
      const row = { ...rest, firstMessageId: firstId, lastMessageId: throughId, createdAt: Date.now() };
      await tx.run(...insert("memory_entries", row, [...ENTRY_FIELDS, "firstMessageId", "lastMessageId", "createdAt"]));
      return true;
    });
  }

  /** The conversation's newest entries up to id `throughId` (the prompt's head) that fit in `tokenBudget`, oldest first. */
  async recentEntries(conversationId: number, tokenBudget: number, throughId = Number.MAX_SAFE_INTEGER) {
    const rows = await this.db.budgeted<MemoryEntry>(
      `SELECT ${columns(["id", "periodStart", "periodEnd", "text", "tokens"])} FROM memory_entries
        WHERE conversation_id = $1 AND id <= $2`,
      "id DESC",
      [conversationId, throughId],
      tokenBudget,
    );
    return rows.reverse();
  }

  /** The newest entry that summarises only messages up to `messageId` (0 for none): what a trim there may show. */
  entriesThrough = (conversationId: number, messageId: number) => {
    const through = "SELECT max(id) FROM memory_entries WHERE conversation_id = $1 AND last_message_id <= $2";
    return total(this.db, through, [conversationId, messageId]);
  };

  /** Tokens of the messages trimmed out of the prompt that no entry summarises yet. */
  trimmedPendingTokens = (conversationId: number) =>
    total(
      this.db,
      `SELECT coalesce(sum(tokens), 0) ${UNCONSOLIDATED}
          AND id <= (SELECT trimmed_through FROM conversations WHERE id = $1)`,
      [conversationId],
    );
}
