import { inboundFromStored } from "../bus/stored-inbound.js";
import { columns, insert, SqlGroup, scalar, total, withoutNulls } from "./sql.js";
import type {
  ConversationSummary,
  HelperRun,
  HelperStatus,
  HistoryEntry,
  RetentionAges,
  StoreStatus,
  ToolCallEntry,
} from "./types.js";

const PREVIEW_CHARS = 2000;
/** Where a helper's result longer than this is cut: the table is for `pincer status` and forensics. */
const RESULT_CHARS = 20_000;
const PREVIEW = 200;
const DAY_MS = 24 * 60 * 60 * 1000;
const HELPER_FIELDS = ["id", "sessionKey", "label", "task", "model", "status", "origin", "startedAt"] as const;

/** Remembers every tool call (arguments and the start of the result) for `pincer status` and forensics. */
export class SqlAudit extends SqlGroup {
  async record({ sessionKey, tool, arguments: args, result, durationMs }: ToolCallEntry): Promise<void> {
    const row = {
      sessionKey,
      tool,
      arguments: args.slice(0, PREVIEW_CHARS),
      result: result.slice(0, PREVIEW_CHARS),
      ok: !result.startsWith("Error:"),
      durationMs: Math.round(durationMs),
      createdAt: Date.now(),
    };
    await this.db.run(...insert("tool_audit", row));
  }
}

/** Spawned helpers' runs, so a restart knows which were cut short. */
export class SqlHelperRuns extends SqlGroup {
  async start(run: Omit<HelperRun, "status" | "finishedAt" | "result">): Promise<void> {
    const row = { ...run, status: "running", origin: JSON.stringify(run.origin) };
    await this.db.run(...insert("helper_runs", row, HELPER_FIELDS));
  }

  async finish(id: string, status: Exclude<HelperStatus, "running">, result: string, at = Date.now()): Promise<void> {
    await this.db.run(
      "UPDATE helper_runs SET status = $1, result = $2, finished_at = $3 WHERE id = $4 AND status = 'running'",
      [status, result.slice(0, RESULT_CHARS), at, id],
    );
  }

  /** Runs still marked running: after a restart, the ones the previous process never finished. */
  running = () => this.list(`WHERE status = 'running' ORDER BY started_at, ${this.db.seq}`, []);
  recent = (limit: number) => this.list(`ORDER BY started_at DESC, ${this.db.seq} DESC LIMIT $1`, [limit]);

  private async list(rest: string, params: unknown[]): Promise<HelperRun[]> {
    const select = `SELECT ${columns([...HELPER_FIELDS, "finishedAt", "result"])} FROM helper_runs ${rest}`;
    const rows = await this.db.rows<Omit<HelperRun, "origin"> & { origin: string }>(select, params);
    return rows.map((row) => ({ ...withoutNulls(row), origin: inboundFromStored(row.origin) }));
  }
}

/** Read-only views for the control page. Cheap, bounded queries only. */
export class SqlDashboard extends SqlGroup {
  /** Open conversations, most recently active first. */
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

  /**
   * The open conversation's newest messages with the audit's tool calls between them, oldest first. Tool results come
   * from the audit (what the tool returned), not the model's copy.
   */
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
  async ping(): Promise<boolean> {
    try {
      return (await scalar<number>(this.db, "SELECT 1")) === 1;
    } catch {
      return false;
    }
  }
}

export class SqlRetention extends SqlGroup {
  /**
   * Deletes tool-audit and model-usage rows, jobs' runs, conversations archived by `/new` (with their messages) and dead letters
   * older than their ages, all or nothing. The open conversation of a chat is never touched, however old: the context
   * window already bounds what the model sees of it.
   */
  prune(ages: Omit<RetentionAges, "mediaDays" | "jobRunDays"> & { jobRunDays?: number }, now = Date.now()) {
    return this.db.transaction(async (tx) => {
      const before = (days: number) => [now - days * DAY_MS];
      const auditRows = await tx.run("DELETE FROM tool_audit WHERE created_at < $1", before(ages.auditDays));
      const archived = "FROM conversations WHERE archived_at IS NOT NULL AND archived_at < $1";
      const old = before(ages.archivedConversationDays);
      const messages = await tx.run(`DELETE FROM messages WHERE conversation_id IN (SELECT id ${archived})`, old);
      const conversations = await tx.run(`DELETE ${archived}`, old);
      const dead = "DELETE FROM outbox WHERE status = 'dead' AND finished_at < $1";
      const deadLetters = await tx.run(dead, before(ages.deadLetterDays));
      const usageRows = await tx.run("DELETE FROM model_usage WHERE created_at < $1", before(ages.usageDays));
      // Approvals are kept as long as the audit of the calls they let through (or not).
      await tx.run("DELETE FROM approvals WHERE expires_at < $1", before(ages.auditDays));
      const { jobRunDays } = ages;
      const jobRuns = jobRunDays ? await tx.run("DELETE FROM job_runs WHERE fired_at < $1", before(jobRunDays)) : 0;
      return { auditRows, conversations, messages, deadLetters, usageRows, jobRuns };
    });
  }
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
