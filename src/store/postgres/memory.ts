import { agentOf } from "../../bus/types.js";
import { type FoundRow, SqlMemory } from "../memory.js";
import { buildFtsQuery, likePattern } from "../sqlite/fts-query.js";
import type { SearchHit, SearchScope } from "../types.js";

/** Memory on PostgreSQL: SQLite's search terms answered by pg_trgm (CJK too), accents folded as SQLite's (pincer_fold),
 * ranked by how many terms a text holds, then by PostgreSQL's own full-text rank. */
export class PostgresMemory extends SqlMemory {
  async search(query: string, scope: SearchScope): Promise<SearchHit[]> {
    const fts = buildFtsQuery(query);
    const { memoryOf = agentOf(scope.sessionKey) } = scope;
    const terms = [...new Set([...fts.terms, ...fts.short])];
    if (terms.length === 0) return [];
    const patterns = terms.map(likePattern);
    // $1 session, $2 MEMORY.md allowed, $3 limit, $4 words for the full-text rank, $5 MEMORY.md's agent, $6… patterns.
    const like = (column: string, i: number) => `pincer_fold(${column}) ILIKE pincer_fold($${i + 6})`;
    const hits = (column: string) => patterns.map((_, i) => `(${like(column, i)})::int`).join(" + ");
    const any = (column: string) => patterns.map((_, i) => like(column, i)).join(" OR ");
    const rank = (column: string) =>
      `ts_rank(to_tsvector('simple', pincer_fold(${column})), websearch_to_tsquery('simple', pincer_fold($4)))`;
    const rows = await this.db.rows<FoundRow>(
      `SELECT kind, id, role, at, text FROM (
         SELECT 'message' AS kind, m.id, m.role, m.created_at AS at, m.content AS text,
                ${hits("m.content")} AS score, ${rank("m.content")} AS rank
           FROM messages m JOIN conversations c ON c.id = m.conversation_id
          WHERE c.session_key = $1 AND m.role IN ('user', 'assistant') AND (${any("m.content")})
         UNION ALL
         SELECT 'entry', e.id, NULL, e.period_end, e.text, ${hits("e.text")}, ${rank("e.text")}
           FROM memory_entries e WHERE e.session_key = $1 AND (${any("e.text")})
         UNION ALL
         SELECT 'memory', p.id, NULL, (SELECT modified_at FROM memory_file_state WHERE agent = $5), p.text,
                ${hits("p.text")}, ${rank("p.text")}
           FROM memory_file_paragraphs p WHERE $2 AND p.agent = $5 AND (${any("p.text")})
       ) found ORDER BY score DESC, rank DESC, at DESC, id DESC LIMIT $3`,
      [scope.sessionKey, scope.memoryFile, scope.limit, terms.join(" or "), memoryOf, ...patterns],
    );
    return this.hits(rows, fts.terms);
  }
}
