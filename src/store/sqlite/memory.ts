import { agentOf } from "../../bus/types.js";
import { type FoundRow, SqlMemory } from "../memory.js";
import type { SearchHit, SearchScope } from "../types.js";
import { buildFtsQuery, likePattern } from "./fts-query.js";

/** Memory in SQLite, with its full-text index (FTS5, trigram). */
export class SqliteMemory extends SqlMemory {
  /** BM25-ranked. Queries of only one- or two-character terms (too short for trigrams) scan with LIKE, newest first. */
  async search(query: string, scope: SearchScope): Promise<SearchHit[]> {
    await this.indexPending();
    const fts = buildFtsQuery(query);
    const { sessionKey, memoryOf = agentOf(sessionKey) } = scope;
    const params = [sessionKey, scope.memoryFile ? 1 : 0, scope.limit, memoryOf];
    const rows: FoundRow[] = fts.match ? await this.matchRows(fts.match, params) : [];
    if (rows.length < scope.limit && fts.short.length > 0) {
      const seen = new Set(rows.map((r) => `${r.kind}:${r.id}`));
      for (const row of await this.likeRows(fts.short, params)) {
        if (rows.length >= scope.limit) break;
        if (!seen.has(`${row.kind}:${row.id}`)) rows.push(row);
      }
    }
    return this.hits(rows, fts.terms);
  }

  /** Indexes the messages stored since the last call in one transaction (turns only mark them: 011-fts-deferred). */
  override async indexPending(): Promise<number> {
    if ((await this.db.rows("SELECT 1 FROM messages_fts_pending LIMIT 1")).length === 0) return 0;
    return this.db.transaction(async (tx) => {
      const indexed = await tx.run(
        "INSERT INTO messages_fts (rowid, content) SELECT m.id, m.content FROM messages_fts_pending p JOIN messages m ON m.id = p.id",
      );
      await tx.run("DELETE FROM messages_fts_pending");
      return indexed;
    });
  }

  /** $1 the session, $2 whether MEMORY.md is searched, $3 the limit, $4 the session's agent (whose MEMORY.md it is),
   * $5 the FTS5 query. */
  private matchRows(match: string, params: unknown[]): Promise<FoundRow[]> {
    return this.db.rows<FoundRow>(
      `SELECT * FROM (
         SELECT 'message' AS kind, m.id AS id, m.role AS role, m.created_at AS at,
                m.content AS text, bm25(messages_fts) AS score
           FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid
           JOIN conversations c ON c.id = m.conversation_id
          WHERE messages_fts MATCH $5 AND c.session_key = $1
         UNION ALL
         SELECT 'entry', e.id, NULL, e.period_end, e.text, bm25(entries_fts)
           FROM entries_fts JOIN memory_entries e ON e.id = entries_fts.rowid
          WHERE entries_fts MATCH $5 AND e.session_key = $1
         UNION ALL
         SELECT 'memory', rowid, NULL, (SELECT modified_at FROM memory_file_state WHERE agent = $4),
                text, bm25(memory_file_fts)
           FROM memory_file_fts WHERE $2 = 1 AND agent = $4 AND memory_file_fts MATCH $5
       ) ORDER BY score, at DESC LIMIT $3`,
      [...params, match],
    );
  }

  /** A scan for terms too short for trigrams, best first by how many of them a text contains. */
  private likeRows(terms: string[], params: unknown[]): Promise<FoundRow[]> {
    const hits = (column: string) => terms.map((_, i) => `(${column} LIKE $${i + 5} ESCAPE '\\')`).join(" + ");
    return this.db.rows<FoundRow>(
      `SELECT * FROM (
         SELECT 'message' AS kind, m.id AS id, m.role AS role, m.created_at AS at,
                m.content AS text, ${hits("m.content")} AS score
           FROM messages m JOIN conversations c ON c.id = m.conversation_id
          WHERE c.session_key = $1 AND m.role IN ('user', 'assistant') AND m.content IS NOT NULL
         UNION ALL
         SELECT 'entry', e.id, NULL, e.period_end, e.text, ${hits("e.text")}
           FROM memory_entries e WHERE e.session_key = $1
         UNION ALL
         SELECT 'memory', rowid, NULL, (SELECT modified_at FROM memory_file_state WHERE agent = $4),
                text, ${hits("text")}
           FROM memory_file_fts WHERE $2 = 1 AND agent = $4
       ) WHERE score > 0 ORDER BY score DESC, at DESC LIMIT $3`,
      [...params, ...terms.map(likePattern)],
    );
  }
}
