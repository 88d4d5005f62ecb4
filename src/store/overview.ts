import { SqlGroup, scalar, total, withoutNulls } from "./sql.js";
import type { ConversationSummary, HistoryEntry, StoreStatus } from "./types.js";

const PREVIEW = 200;

/** Read-only views for the control page. Cheap, bounded queries only. */
export class SqlDashboard extends SqlGroup {
  async conversations(limit = 50): Promise<ConversationSummary[]> {
    const rows = await this.db.rows<ConversationSummary>(
      `SELECT c.session_key AS "sessionKey",
              (SELECT count(*) FROM messages WHERE conversation_id = c.id) AS messages,
              (SELECT coalesce(sum(tokens), 0) FROM messages WHERE conversation_id = c.id) AS tokens,
              m.role AS "lastRole", substr(m.content, 1, ${PREVIEW}) AS "lastText",
              coalesce(m.created_at, c.created_at) AS "lastAt"
         FROM conversations c
         LEFT JOIN messages m ON m.id = (
           SELECT max(id) FROM messages
            WHERE conversation_id = c.id AND role != 'tool' AND content IS NOT NULL AND content != '')
        WHERE c.archived_at IS NULL
        ORDER BY "lastAt" DESC, c.id DESC
        LIMIT $1`,
      [limit],
    );
    return rows.map(withoutNulls);
  }

  /** The open conversation's newest messages and the audit's tool calls (what tools returned), oldest first. */
  async history(sessionKey: string, limit = 200): Promise<HistoryEntry[]> {
    const [conversation] = await this.db.rows<{ id: number; created_at: number }>(
      "SELECT id, created_at FROM conversations WHERE session_key = $1 AND archived_at IS NULL ORDER BY id DESC LIMIT 1",
      [sessionKey],
    );
    if (!conversation) return [];
    const messages = await this.db.rows<{ role: string; content: string; at: number }>(
      `SELECT role, content, created_at AS at FROM messages
        WHERE conversation_id = $1 AND role != 'tool' AND content IS NOT NULL AND content != ''
        ORDER BY id DESC LIMIT $2`,
      [conversation.id, limit],
    );
    const tools = await this.db.rows<Required<Omit<HistoryEntry, "kind" | "role" | "text" | "ok">> & { ok: unknown }>(
      `SELECT tool, arguments, result, ok, duration_ms AS "durationMs", created_at AS at FROM tool_audit
        WHERE session_key = $1 AND created_at >= $2 ORDER BY id DESC LIMIT $3`,
      [sessionKey, conversation.created_at, limit],
    );
    const entries: HistoryEntry[] = [
      ...messages.reverse().map((m): HistoryEntry => ({ kind: "message", role: m.role, text: m.content, at: m.at })),
      ...tools.reverse().map((t): HistoryEntry => ({ kind: "tool", ...t, ok: Boolean(t.ok) })),
    ];
    // Oldest first (the sort is stable); at the same millisecond a tool call goes before the message.
    return entries.sort((a, b) => a.at - b.at || (a.kind === b.kind ? 0 : a.kind === "tool" ? -1 : 1)).slice(-limit);
  }

  outboxPending = () => total(this.db, "SELECT count(*) FROM outbox WHERE status = 'pending'");
  inboxPending = () => total(this.db, "SELECT count(*) FROM inbox WHERE status = 'pending'");

  /** True when the database answers a trivial query (never throws). */
  ping = async () => (await scalar<number>(this.db, "SELECT 1").catch(() => 0)) === 1;
}
export class SqlStatus extends SqlGroup {
  async summary(): Promise<StoreStatus> {
    const [counts] = await this.db.rows<Omit<StoreStatus, "lastToolCall">>(
      `SELECT (SELECT count(*) FROM conversations WHERE archived_at IS NULL) AS "openConversations",
              (SELECT count(*) FROM messages) AS messages,
              (SELECT count(*) FROM inbox WHERE status = 'pending') AS "pendingInbound",
              (SELECT count(*) FROM outbox WHERE status = 'pending') AS "pendingOutbound",
              (SELECT count(*) FROM outbox WHERE status = 'dead') AS "deadLetters",
              (SELECT count(*) FROM tool_audit) AS "toolCalls"`,
    );
    const [last] = await this.db.rows<{ tool: string; ok: boolean | number; at: number }>(
      "SELECT tool, ok, created_at AS at FROM tool_audit ORDER BY id DESC LIMIT 1",
    );
    return { ...counts, lastToolCall: last && { ...last, ok: Boolean(last.ok) } };
  }
}
