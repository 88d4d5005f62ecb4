import type pg from "pg";
import type { ConversationStore, StoredMessage, StoredRole, ToolCallRecord } from "../store.js";
import { type Db, scalar, transaction } from "./db.js";

export type CountTokens = (message: StoredMessage) => number;

interface MessageRow {
  role: StoredRole;
  content: string | null;
  tool_calls: string | null;
  tool_call_id: string | null;
  tokens: number;
  created_at: number;
}

export class PostgresConversations implements ConversationStore {
  constructor(
    private readonly pool: pg.Pool,
    private readonly countTokens: CountTokens,
  ) {}

  archive(sessionKey: string): Promise<void> {
    return archiveConversation(this.pool, sessionKey);
  }

  append(sessionKey: string, messages: StoredMessage[]): Promise<void> {
    return transaction(this.pool, (tx) => appendMessages(tx, this.countTokens, sessionKey, messages));
  }

  /** The running sum stops at the budget, as SQLite's walk backwards does. */
  async recent(sessionKey: string, tokenBudget: number): Promise<StoredMessage[]> {
    const { rows } = await this.pool.query<MessageRow>(
      `SELECT role, content, tool_calls, tool_call_id, tokens, created_at FROM (
         SELECT m.*, sum(m.tokens) OVER (ORDER BY m.id DESC) AS used
           FROM conversations c JOIN messages m ON m.conversation_id = c.id AND m.id > c.consolidated_through
          WHERE c.session_key = $1 AND c.archived_at IS NULL
       ) t WHERE used <= $2 ORDER BY id`,
      [sessionKey, Math.min(tokenBudget, Number.MAX_SAFE_INTEGER)],
    );
    const picked = rows.map(
      (row): StoredMessage => ({
        role: row.role,
        content: row.content,
        toolCalls: row.tool_calls ? (JSON.parse(row.tool_calls) as ToolCallRecord[]) : undefined,
        toolCallId: row.tool_call_id ?? undefined,
        createdAt: row.created_at,
        tokens: row.tokens,
      }),
    );
    // A cut through a tool exchange would leave results without their call: start at a user message.
    const firstUser = picked.findIndex((m) => m.role === "user");
    return firstUser === -1 ? [] : picked.slice(firstUser);
  }

  async count(sessionKey: string): Promise<number> {
    return (
      (await scalar<number>(
        this.pool,
        `SELECT count(*) FROM messages m JOIN conversations c ON c.id = m.conversation_id
          WHERE c.session_key = $1 AND c.archived_at IS NULL`,
        [sessionKey],
      )) ?? 0
    );
  }
}

export async function archiveConversation(db: Db, sessionKey: string): Promise<void> {
  await db.query("UPDATE conversations SET archived_at = $1 WHERE session_key = $2 AND archived_at IS NULL", [
    Date.now(),
    sessionKey,
  ]);
}

/** Appends to the session's open conversation (created here when it has none), in one round trip for the rows. */
export async function appendMessages(
  db: Db,
  countTokens: CountTokens,
  sessionKey: string,
  messages: StoredMessage[],
): Promise<void> {
  const conversationId = (await openConversation(db, sessionKey)) ?? (await begin(db, sessionKey, messages));
  const now = Date.now();
  await db.query(
    `INSERT INTO messages (conversation_id, role, content, tool_calls, tool_call_id, tokens, created_at)
     SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::int[], $7::bigint[])`,
    [
      conversationId,
      messages.map((m) => m.role),
      messages.map((m) => m.content),
      messages.map((m) => (m.toolCalls?.length ? JSON.stringify(m.toolCalls) : null)),
      messages.map((m) => m.toolCallId ?? null),
      messages.map((m) => countTokens(m)),
      messages.map((m) => m.createdAt ?? now),
    ],
  );
}

/**
 * A conversation created with its first turn's messages begins when the first of them arrived
 * (never before the previous one ended). Another process creating it at the same moment wins
 * the unique index; its conversation is used.
 */
async function begin(db: Db, sessionKey: string, messages: StoredMessage[]): Promise<number> {
  const now = Date.now();
  const first = messages.reduce((t, m) => Math.min(t, m.createdAt ?? now), now);
  const created = await scalar<number>(
    db,
    `INSERT INTO conversations (session_key, created_at)
     SELECT $1, greatest($2, coalesce(max(archived_at), 0)) FROM conversations WHERE session_key = $1
     ON CONFLICT (session_key) WHERE archived_at IS NULL DO NOTHING RETURNING id`,
    [sessionKey, first],
  );
  return created ?? ((await openConversation(db, sessionKey)) as number);
}

export function openConversation(db: Db, sessionKey: string): Promise<number | undefined> {
  return scalar<number>(db, "SELECT id FROM conversations WHERE session_key = $1 AND archived_at IS NULL", [
    sessionKey,
  ]);
}
