import type pg from "pg";
import { type HelperRunRow, toRun } from "../rows.js";
import type {
  AuditStore,
  ConversationSummary,
  DashboardStore,
  HelperRun,
  HelperRunStore,
  HelperStatus,
  HistoryEntry,
  Pruned,
  RetentionAges,
  RetentionStore,
  StatusStore,
  StoreStatus,
  ToolCallEntry,
} from "../store.js";
import { scalar, transaction } from "./db.js";

const PREVIEW_CHARS = 2000;
const RESULT_CHARS = 20_000;
const PREVIEW = 200;
const DAY_MS = 24 * 60 * 60 * 1000;

export class PostgresAudit implements AuditStore {
  constructor(private readonly pool: pg.Pool) {}

  async record(entry: ToolCallEntry): Promise<void> {
    await this.pool.query(
      "INSERT INTO tool_audit (session_key, tool, arguments, result, ok, duration_ms, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
      [
        entry.sessionKey,
        entry.tool,
        entry.arguments.slice(0, PREVIEW_CHARS),
        entry.result.slice(0, PREVIEW_CHARS),
        !entry.result.startsWith("Error:"),
        Math.round(entry.durationMs),
        Date.now(),
      ],
    );
  }
}

export class PostgresHelperRuns implements HelperRunStore {
  constructor(private readonly pool: pg.Pool) {}

  async start(run: Omit<HelperRun, "status" | "finishedAt" | "result">): Promise<void> {
    await this.pool.query(
      "INSERT INTO helper_runs (id, session_key, label, task, model, status, origin, started_at) VALUES ($1, $2, $3, $4, $5, 'running', $6, $7)",
      [run.id, run.sessionKey, run.label ?? null, run.task, run.model, JSON.stringify(run.origin), run.startedAt],
    );
  }

  async finish(id: string, status: Exclude<HelperStatus, "running">, result: string, at = Date.now()): Promise<void> {
    await this.pool.query(
      "UPDATE helper_runs SET status = $1, result = $2, finished_at = $3 WHERE id = $4 AND status = 'running'",
      [status, result.slice(0, RESULT_CHARS), at, id],
    );
  }

  async running(): Promise<HelperRun[]> {
    const { rows } = await this.pool.query<HelperRunRow>(
      "SELECT * FROM helper_runs WHERE status = 'running' ORDER BY started_at, seq",
    );
    return rows.map(toRun);
  }

  async recent(limit: number): Promise<HelperRun[]> {
    const { rows } = await this.pool.query<HelperRunRow>(
      "SELECT * FROM helper_runs ORDER BY started_at DESC, seq DESC LIMIT $1",
      [limit],
    );
    return rows.map(toRun);
  }
}

export class PostgresDashboard implements DashboardStore {
  constructor(private readonly pool: pg.Pool) {}

  async conversations(limit = 50): Promise<ConversationSummary[]> {
    const { rows } = await this.pool.query<ConversationSummary & { lastText: string | null; lastRole: string | null }>(
      `SELECT c.session_key AS "sessionKey",
              (SELECT count(*) FROM messages WHERE conversation_id = c.id) AS messages,
              (SELECT coalesce(sum(tokens), 0)::bigint FROM messages WHERE conversation_id = c.id) AS tokens,
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
    return rows.map((r) => ({ ...r, lastText: r.lastText ?? undefined, lastRole: r.lastRole ?? undefined }));
  }

  async history(sessionKey: string, limit = 200): Promise<HistoryEntry[]> {
    const { rows: open } = await this.pool.query<{ id: number; created_at: number }>(
      "SELECT id, created_at FROM conversations WHERE session_key = $1 AND archived_at IS NULL",
      [sessionKey],
    );
    const conversation = open[0];
    if (!conversation) return [];
    const messages = await this.pool.query<{ role: string; content: string; at: number }>(
      `SELECT role, content, created_at AS at FROM messages
        WHERE conversation_id = $1 AND role != 'tool' AND content IS NOT NULL AND content != ''
        ORDER BY id DESC LIMIT $2`,
      [conversation.id, limit],
    );
    const tools = await this.pool.query<{
      tool: string;
      arguments: string;
      result: string;
      ok: boolean;
      durationMs: number;
      at: number;
    }>(
      `SELECT tool, arguments, result, ok, duration_ms AS "durationMs", created_at AS at FROM tool_audit
        WHERE session_key = $1 AND created_at >= $2 ORDER BY id DESC LIMIT $3`,
      [sessionKey, conversation.created_at, limit],
    );
    const entries: HistoryEntry[] = [
      ...messages.rows
        .reverse()
        .map((m): HistoryEntry => ({ kind: "message", role: m.role, text: m.content, at: m.at })),
      ...tools.rows.reverse().map((t): HistoryEntry => ({ kind: "tool", ...t })),
    ];
    // Oldest first (the sort is stable); at the same millisecond a tool call goes before the message.
    return entries.sort((a, b) => a.at - b.at || (a.kind === b.kind ? 0 : a.kind === "tool" ? -1 : 1)).slice(-limit);
  }

  async outboxPending(): Promise<number> {
    return (await scalar<number>(this.pool, "SELECT count(*) FROM outbox WHERE status = 'pending'")) ?? 0;
  }

  async inboxPending(): Promise<number> {
    return (await scalar<number>(this.pool, "SELECT count(*) FROM inbox WHERE status = 'pending'")) ?? 0;
  }

  async ping(): Promise<boolean> {
    try {
      return (await scalar<number>(this.pool, "SELECT 1")) === 1;
    } catch {
      return false;
    }
  }
}

export class PostgresRetention implements RetentionStore {
  constructor(private readonly pool: pg.Pool) {}

  prune(ages: Omit<RetentionAges, "mediaDays">, now = Date.now()): Promise<Pruned> {
    return transaction(this.pool, async (tx) => {
      const audit = await tx.query("DELETE FROM tool_audit WHERE created_at < $1", [now - ages.auditDays * DAY_MS]);
      const archivedBefore = now - ages.archivedConversationDays * DAY_MS;
      const old = "SELECT id FROM conversations WHERE archived_at IS NOT NULL AND archived_at < $1";
      const messages = await tx.query(`DELETE FROM messages WHERE conversation_id IN (${old})`, [archivedBefore]);
      const conversations = await tx.query(
        "DELETE FROM conversations WHERE archived_at IS NOT NULL AND archived_at < $1",
        [archivedBefore],
      );
      const dead = await tx.query("DELETE FROM outbox WHERE status = 'dead' AND finished_at < $1", [
        now - ages.deadLetterDays * DAY_MS,
      ]);
      return {
        auditRows: audit.rowCount ?? 0,
        conversations: conversations.rowCount ?? 0,
        messages: messages.rowCount ?? 0,
        deadLetters: dead.rowCount ?? 0,
      };
    });
  }
}

export class PostgresStatus implements StatusStore {
  constructor(private readonly pool: pg.Pool) {}

  async summary(): Promise<StoreStatus> {
    const { rows } = await this.pool.query<Omit<StoreStatus, "lastToolCall">>(
      `SELECT (SELECT count(*) FROM conversations WHERE archived_at IS NULL) AS "openConversations",
              (SELECT count(*) FROM messages) AS messages,
              (SELECT count(*) FROM inbox WHERE status = 'pending') AS "pendingInbound",
              (SELECT count(*) FROM outbox WHERE status = 'pending') AS "pendingOutbound",
              (SELECT count(*) FROM outbox WHERE status = 'dead') AS "deadLetters",
              (SELECT count(*) FROM tool_audit) AS "toolCalls"`,
    );
    const last = await this.pool.query<{ tool: string; ok: boolean; at: number }>(
      "SELECT tool, ok, created_at AS at FROM tool_audit ORDER BY id DESC LIMIT 1",
    );
    return { ...rows[0], lastToolCall: last.rows[0] };
  }
}
