import type { ConversationSummary, DashboardStore, HistoryEntry } from "../store.js";
import type { Database } from "./database.js";

const PREVIEW = 200;

export class SqliteDashboard implements DashboardStore {
  constructor(private readonly db: Database) {}

  async conversations(limit = 50): Promise<ConversationSummary[]> {
    const rows = this.db
      .prepare(
        `SELECT c.session_key AS sessionKey,
                (SELECT count(*) FROM messages WHERE conversation_id = c.id) AS messages,
                (SELECT coalesce(sum(tokens), 0) FROM messages WHERE conversation_id = c.id) AS tokens,
                m.role AS lastRole, substr(m.content, 1, ${PREVIEW}) AS lastText,
                coalesce(m.created_at, c.created_at) AS lastAt
           FROM conversations c
           LEFT JOIN messages m ON m.id = (
             SELECT max(id) FROM messages
              WHERE conversation_id = c.id AND role != 'tool' AND content IS NOT NULL AND content != '')
          WHERE c.archived_at IS NULL
          ORDER BY lastAt DESC, c.id DESC
          LIMIT ?`,
      )
      .all(limit) as Array<ConversationSummary & { lastText: string | null; lastRole: string | null }>;
    return rows.map((r) => ({ ...r, lastText: r.lastText ?? undefined, lastRole: r.lastRole ?? undefined }));
  }

  /**
   * The open conversation's newest messages with the audit's tool calls between them, oldest
   * first. Tool results come from the audit (what the tool returned), not the model's copy.
   */
  async history(sessionKey: string, limit = 200): Promise<HistoryEntry[]> {
    const conversation = this.db
      .prepare(
        "SELECT id, created_at AS createdAt FROM conversations WHERE session_key = ? AND archived_at IS NULL ORDER BY id DESC LIMIT 1",
      )
      .get(sessionKey) as { id: number; createdAt: number } | undefined;
    if (!conversation) return [];
    const messages = (
      this.db
        .prepare(
          `SELECT role, content, created_at AS at FROM messages
            WHERE conversation_id = ? AND role != 'tool' AND content IS NOT NULL AND content != ''
            ORDER BY id DESC LIMIT ?`,
        )
        .all(conversation.id, limit) as Array<{ role: string; content: string; at: number }>
    )
      .reverse()
      .map((m): HistoryEntry => ({ kind: "message", role: m.role, text: m.content, at: m.at }));
    const tools = (
      this.db
        .prepare(
          `SELECT tool, arguments, result, ok, duration_ms AS durationMs, created_at AS at FROM tool_audit
            WHERE session_key = ? AND created_at >= ? ORDER BY id DESC LIMIT ?`,
        )
        .all(sessionKey, conversation.createdAt, limit) as Array<{
        tool: string;
        arguments: string;
        result: string;
        ok: number;
        durationMs: number;
        at: number;
      }>
    )
      .reverse()
      .map((t): HistoryEntry => ({ kind: "tool", ...t, ok: t.ok === 1 }));
    // Oldest first (the sort is stable); at the same millisecond a tool call goes before the message.
    return [...messages, ...tools]
      .sort((a, b) => a.at - b.at || (a.kind === b.kind ? 0 : a.kind === "tool" ? -1 : 1))
      .slice(-limit);
  }

  async outboxPending(): Promise<number> {
    return this.db.prepare("SELECT count(*) FROM outbox WHERE status = 'pending'").pluck().get() as number;
  }

  async inboxPending(): Promise<number> {
    return this.db.prepare("SELECT count(*) FROM inbox WHERE status = 'pending'").pluck().get() as number;
  }

  async ping(): Promise<boolean> {
    try {
      return this.db.prepare("SELECT 1").pluck().get() === 1;
    } catch {
      return false;
    }
  }
}
