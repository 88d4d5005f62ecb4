import type { Database } from "./database.js";

export type StoredRole = "user" | "assistant" | "tool";

export interface ToolCallRecord {
  id: string;
  name: string;
  arguments: string;
}

/** One message of a conversation as the model sees it. */
export interface StoredMessage {
  role: StoredRole;
  content: string | null;
  toolCalls?: ToolCallRecord[];
  toolCallId?: string;
  createdAt?: number;
  /** What the message costs in a request, as stored (set when read back for the prompt). */
  tokens?: number;
}

/** A rough token count (about four characters a token) that is cheap and never underestimates much. */
export function estimateTokens(message: StoredMessage): number {
  const chars =
    (message.content?.length ?? 0) +
    (message.toolCalls?.reduce((n, c) => n + c.name.length + c.arguments.length + 16, 0) ?? 0);
  return Math.ceil(chars / 4) + 4;
}

/**
 * Conversations and their messages. A session key has one open conversation at a time;
 * `/new` archives it and the next message starts another.
 */
export class ConversationStore {
  constructor(
    private readonly db: Database,
    /** Tokens a message costs in a request; stored with it so picking history needs no tokenizer. */
    private readonly countTokens: (message: StoredMessage) => number = estimateTokens,
  ) {}

  /** The id of the session's open conversation, created on first use. */
  openConversation(sessionKey: string): number {
    const row = this.findOpen(sessionKey);
    if (row !== undefined) return row;
    return Number(
      this.db.prepare("INSERT INTO conversations (session_key, created_at) VALUES (?, ?)").run(sessionKey, Date.now())
        .lastInsertRowid,
    );
  }

  /**
   * A conversation created with its first turn's messages begins when the first of them arrived,
   * not when the turn is stored: the control page shows the tool calls made since it began, and
   * the first turn's come before it is stored. Never before the previous one ended, though (a
   * message that waited behind /new).
   */
  private begin(sessionKey: string, messages: StoredMessage[]): number {
    const now = Date.now();
    const first = messages.reduce((t, m) => Math.min(t, m.createdAt ?? now), now);
    const ended = this.db
      .prepare("SELECT max(archived_at) FROM conversations WHERE session_key = ?")
      .pluck()
      .get(sessionKey) as number | null;
    return Number(
      this.db
        .prepare("INSERT INTO conversations (session_key, created_at) VALUES (?, ?)")
        .run(sessionKey, Math.max(first, ended ?? 0)).lastInsertRowid,
    );
  }

  private findOpen(sessionKey: string): number | undefined {
    return findOpenConversation(this.db, sessionKey);
  }

  /** Starts a fresh conversation for the session (the old one stays in the database). */
  archive(sessionKey: string): void {
    this.db
      .prepare("UPDATE conversations SET archived_at = ? WHERE session_key = ? AND archived_at IS NULL")
      .run(Date.now(), sessionKey);
  }

  append(sessionKey: string, messages: StoredMessage[]): void {
    const conversationId = this.findOpen(sessionKey) ?? this.begin(sessionKey, messages);
    const insert = this.db.prepare(
      "INSERT INTO messages (conversation_id, role, content, tool_calls, tool_call_id, tokens, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
    );
    this.db.transaction(() => {
      for (const m of messages) {
        insert.run(
          conversationId,
          m.role,
          m.content,
          m.toolCalls?.length ? JSON.stringify(m.toolCalls) : null,
          m.toolCallId ?? null,
          this.countTokens(m),
          m.createdAt ?? Date.now(),
        );
      }
    })();
  }

  /**
   * The newest messages of the open conversation that fit in `tokenBudget`, oldest first, leaving
   * out those consolidated into memory entries.
   * Walks the tail backwards through the index and stops at the budget, so the cost depends
   * on the budget, not on the length of the conversation.
   */
  recent(sessionKey: string, tokenBudget: number): StoredMessage[] {
    // A new chat has no history: its conversation is created with its first messages (append),
    // in the turn's own transaction, not in a commit of its own here.
    const conversationId = this.findOpen(sessionKey);
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

  count(sessionKey: string): number {
    return this.db
      .prepare("SELECT count(*) FROM messages WHERE conversation_id = ?")
      .pluck()
      .get(this.openConversation(sessionKey)) as number;
  }
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
