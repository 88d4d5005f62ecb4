import {
  type ConversationStore,
  estimateTokens,
  type StoredMessage,
  type StoredRole,
  type ToolCallRecord,
} from "../store.js";
import type { Database } from "./database.js";

/** Tokens a message costs in a request; stored with it so picking history needs no tokenizer. */
export type CountTokens = (message: StoredMessage) => number;

export class SqliteConversations implements ConversationStore {
  constructor(
    private readonly db: Database,
    private readonly countTokens: CountTokens = estimateTokens,
  ) {}

  async archive(sessionKey: string): Promise<void> {
    archiveConversation(this.db, sessionKey);
  }

  async append(sessionKey: string, messages: StoredMessage[]): Promise<void> {
    this.db.transaction(() => appendMessages(this.db, this.countTokens, sessionKey, messages))();
  }

  /**
   * Walks the tail backwards through the index and stops at the budget, so the cost depends
   * on the budget, not on the length of the conversation.
   */
  async recent(sessionKey: string, tokenBudget: number): Promise<StoredMessage[]> {
    // A new chat has no history: its conversation is created with its first messages (append),
    // in the turn's own transaction, not in a commit of its own here.
    const conversationId = findOpenConversation(this.db, sessionKey);
    if (conversationId === undefined) return [];
    // Rows as arrays: better-sqlite3 builds them far faster than row objects, and every turn reads these.
    const rows = this.db
      .prepare(
        "SELECT role, content, tool_calls, tool_call_id, tokens, created_at FROM messages WHERE conversation_id = ? AND id > (SELECT consolidated_through FROM conversations WHERE id = ?) ORDER BY id DESC",
      )
      .raw(true)
      .iterate(conversationId, conversationId) as IterableIterator<
      [StoredRole, string | null, string | null, string | null, number, number]
    >;
    const picked: StoredMessage[] = [];
    let used = 0;
    for (const [role, content, toolCalls, toolCallId, tokens, createdAt] of rows) {
      if (used + tokens > tokenBudget) break;
      used += tokens;
      picked.push({
        role,
        content,
        toolCalls: toolCalls ? (JSON.parse(toolCalls) as ToolCallRecord[]) : undefined,
        toolCallId: toolCallId ?? undefined,
        createdAt,
        tokens,
      });
    }
    if (typeof rows.return === "function") rows.return();
    return fromUser(picked);
  }

  async count(sessionKey: string): Promise<number> {
    const conversationId = findOpenConversation(this.db, sessionKey);
    if (conversationId === undefined) return 0;
    return this.db
      .prepare("SELECT count(*) FROM messages WHERE conversation_id = ?")
      .pluck()
      .get(conversationId) as number;
  }
}

export function archiveConversation(db: Database, sessionKey: string): void {
  db.prepare("UPDATE conversations SET archived_at = ? WHERE session_key = ? AND archived_at IS NULL").run(
    Date.now(),
    sessionKey,
  );
}

/** Appends to the session's open conversation (created here when it has none), in the caller's transaction. */
export function appendMessages(
  db: Database,
  countTokens: CountTokens,
  sessionKey: string,
  messages: StoredMessage[],
): void {
  const conversationId = findOpenConversation(db, sessionKey) ?? begin(db, sessionKey, messages);
  const insert = db.prepare(
    "INSERT INTO messages (conversation_id, role, content, tool_calls, tool_call_id, tokens, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
  );
  for (const m of messages) {
    insert.run(
      conversationId,
      m.role,
      m.content,
      m.toolCalls?.length ? JSON.stringify(m.toolCalls) : null,
      m.toolCallId ?? null,
      countTokens(m),
      m.createdAt ?? Date.now(),
    );
  }
}

/**
 * A conversation created with its first turn's messages begins when the first of them arrived,
 * not when the turn is stored: the control page shows the tool calls made since it began, and
 * the first turn's come before it is stored. Never before the previous one ended, though (a
 * message that waited behind /new).
 */
function begin(db: Database, sessionKey: string, messages: StoredMessage[]): number {
  const now = Date.now();
  const first = messages.reduce((t, m) => Math.min(t, m.createdAt ?? now), now);
  const ended = db
    .prepare("SELECT max(archived_at) FROM conversations WHERE session_key = ?")
    .pluck()
    .get(sessionKey) as number | null;
  return Number(
    db
      .prepare("INSERT INTO conversations (session_key, created_at) VALUES (?, ?)")
      .run(sessionKey, Math.max(first, ended ?? 0)).lastInsertRowid,
  );
}

/** The id of the session's open conversation, if it has one (never creates it). */
export function findOpenConversation(db: Database, sessionKey: string): number | undefined {
  return db
    .prepare("SELECT id FROM conversations WHERE session_key = ? AND archived_at IS NULL ORDER BY id DESC LIMIT 1")
    .pluck()
    .get(sessionKey) as number | undefined;
}

/** Newest-first picks, oldest first, starting at a user message: a cut through a tool exchange would leave results without their call. */
function fromUser(picked: StoredMessage[]): StoredMessage[] {
  picked.reverse();
  const firstUser = picked.findIndex((m) => m.role === "user");
  return firstUser === -1 ? [] : picked.slice(firstUser);
}
