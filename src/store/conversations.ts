import {
  type ConversationHead,
  HistoryCache,
  type HistoryRow,
  type HistoryWindow,
  pickNewest,
} from "./history-cache.js";
import { exists, type Sql, scalar, total } from "./sql.js";
import type { StoredMessage } from "./types.js";

/** Tokens a message costs in a request; stored with it so picking history needs no tokenizer. */
export type CountTokens = (message: StoredMessage) => number;

const COLUMNS = `id, role, content, tool_calls AS "toolCalls", tool_call_id AS "toolCallId", tokens, created_at AS "createdAt"`;

type MessageRow = Omit<StoredMessage, "toolCalls" | "toolCallId"> & {
  id: number;
  tokens: number;
  toolCalls: string | null;
  toolCallId: string | null;
};

export const parseCalls = (calls: string | null) =>
  calls ? (JSON.parse(calls) as StoredMessage["toolCalls"]) : undefined;

function historyRow({ id, toolCalls, toolCallId, ...message }: MessageRow): HistoryRow {
  return { id, message: { ...message, toolCalls: parseCalls(toolCalls), toolCallId: toolCallId ?? undefined } };
}

/** Where a conversation's prompt begins: history after `trimmedThrough`, a head of the entries up to `summariesThrough`
 * and MEMORY.md (null: not shown yet). Moved only at trim points, so successive requests share their prefix. */
export interface PromptHead {
  conversationId: number;
  createdAt: number;
  trimmedThrough: number;
  summariesThrough: number;
  memory: string | null;
}

/** Rows a multi-row insert takes at once (SQLite allows 32,766 parameters in a statement). */
const INSERT_ROWS = 500;

/** Conversations and their messages: a session key has one open one; `/new` archives it, the next message starts another. */
export class SqlConversations {
  /** SQLite only (see HistoryCache): elsewhere every turn reads its history anew. */
  private readonly cache: HistoryCache | undefined;

  constructor(
    private readonly db: Sql,
    private readonly countTokens: CountTokens,
  ) {
    this.cache = db.engine === "sqlite" ? new HistoryCache() : undefined;
  }

  /** Drops the cached histories (SQLite): after `/forget` deleted rows, no turn may be sent them from memory. */
  dropCached = () => this.cache?.clear();

  /** Starts a fresh conversation for the session (the old one stays in the database). */
  archive = (sessionKey: string) => archiveConversation(this.db, sessionKey);

  append = (sessionKey: string, messages: StoredMessage[]) =>
    this.db.transaction((tx) => appendMessages(tx, this.countTokens, sessionKey, messages));

  /** Where the open conversation's prompt begins and what its head shows; undefined for a chat without one yet. */
  async head(sessionKey: string): Promise<PromptHead | undefined> {
    // A new chat has none: append creates it with its first messages, in the turn's transaction, not a commit here.
    const [head] = await this.db.rows<PromptHead>(
      `SELECT id AS "conversationId", created_at AS "createdAt", trimmed_through AS "trimmedThrough",
              summaries_through AS "summariesThrough", prompt_memory AS memory
         FROM conversations WHERE session_key = $1 AND archived_at IS NULL ORDER BY id DESC LIMIT 1`,
      [sessionKey],
    );
    return head;
  }

  /** The newest messages after the trim point fitting `tokenBudget`, oldest first (`complete`: all there are). */
  async sinceTrim(sessionKey: string, head: PromptHead, tokenBudget: number): Promise<HistoryWindow> {
    const at = { id: head.conversationId, sessionKey, createdAt: head.createdAt, through: head.trimmedThrough };
    if (this.cache) return this.cached(at, tokenBudget, this.cache);
    const rows = await this.newest(at, tokenBudget);
    return { rows, complete: !(await this.olderThan(at, rows)) };
  }

  /** Moves the trim point forward with what the prompt's head shows from there; never back (another turn's trim). */
  trim = (conversationId: number, to: Pick<PromptHead, "trimmedThrough" | "summariesThrough" | "memory">) =>
    this.db.run(
      `UPDATE conversations SET trimmed_through = $1, summaries_through = $2, prompt_memory = $3
        WHERE id = $4 AND trimmed_through <= $1`,
      [to.trimmedThrough, to.summariesThrough, to.memory, conversationId],
    );

  /** MEMORY.md as the prompt shows it from now on (the owner changed it, or it is shown for the first time). */
  showMemory = (conversationId: number, memory: string) =>
    this.db.run("UPDATE conversations SET prompt_memory = $1 WHERE id = $2", [memory, conversationId]);

  /** The messages the prompt's history holds now (after the trim point), oldest first, from a user message on. */
  async recent(sessionKey: string, tokenBudget: number): Promise<StoredMessage[]> {
    const head = await this.head(sessionKey);
    if (head === undefined) return [];
    const picked = (await this.sinceTrim(sessionKey, head, tokenBudget)).rows.map((r) => r.message);
    // A cut through a tool exchange would leave results without their call: start at a user message.
    const firstUser = picked.findIndex((m) => m.role === "user");
    return firstUser === -1 ? [] : picked.slice(firstUser);
  }

  /** The newest history from the cache and the rows added since it was filled, if it has enough. */
  private async cached(head: ConversationHead, budget: number, cache: HistoryCache): Promise<HistoryWindow> {
    const hit = cache.lookup(head);
    if (hit) {
      const added = await this.db.rows<MessageRow>(
        `SELECT ${COLUMNS} FROM messages WHERE conversation_id = $1 AND id > $2 ORDER BY id`,
        [head.id, Math.max(head.through, hit.rows.at(-1)?.id ?? 0)],
      );
      const rows = added.length ? [...hit.rows, ...added.map(historyRow)] : hit.rows;
      if (added.length) cache.store(head, rows, hit.complete, budget);
      const picked = pickNewest(rows, hit.complete, budget);
      if (picked) return picked;
    }
    const rows = await this.newest(head, budget * 1.25);
    const complete = !(await this.olderThan(head, rows));
    cache.store(head, rows, complete, budget);
    // All that was read fits, but older rows did not come along: the newest that fit are these.
    return pickNewest(rows, complete, budget) ?? { rows, complete: false };
  }

  /** Whether messages after the trim point precede `rows` (the newest of them). */
  private olderThan(head: ConversationHead, rows: HistoryRow[]): Promise<boolean> {
    const older = "SELECT 1 FROM messages WHERE conversation_id = $1 AND id > $2 AND id < $3 LIMIT 1";
    return exists(this.db, older, [head.id, head.through, rows[0]?.id ?? Number.MAX_SAFE_INTEGER]);
  }

  /** The newest rows after the trim point that fit in `budget`, oldest first. */
  private async newest(head: ConversationHead, budget: number): Promise<HistoryRow[]> {
    const rows = await this.db.budgeted<MessageRow>(
      `SELECT ${COLUMNS} FROM messages WHERE conversation_id = $1 AND id > $2`,
      "id DESC",
      [head.id, head.through],
      budget,
    );
    return rows.reverse().map(historyRow);
  }

  count = (sessionKey: string) =>
    total(this.db, `SELECT count(*) FROM messages WHERE conversation_id = (${OPEN})`, [sessionKey]);
}

export async function archiveConversation(db: Sql, sessionKey: string): Promise<void> {
  const archive =
    "UPDATE conversations SET archived_at = $1, prompt_memory = NULL WHERE session_key = $2 AND archived_at IS NULL";
  await db.run(archive, [Date.now(), sessionKey]);
}

/** Appends to the session's open conversation (created here when it has none), in the caller's transaction. */
export async function appendMessages(
  db: Sql,
  countTokens: CountTokens,
  sessionKey: string,
  messages: StoredMessage[],
): Promise<void> {
  const conversationId = (await openConversation(db, sessionKey)) ?? (await begin(db, sessionKey, messages));
  const now = Date.now();
  for (let from = 0; from < messages.length; from += INSERT_ROWS) {
    const batch = messages.slice(from, from + INSERT_ROWS);
    const values = batch.map((_, i) => `(${[1, 2, 3, 4, 5, 6, 7].map((c) => `$${i * 7 + c}`).join(", ")})`);
    await db.run(
      `INSERT INTO messages (conversation_id, role, content, tool_calls, tool_call_id, tokens, created_at)
       VALUES ${values.join(", ")}`,
      batch.flatMap((m) => [
        conversationId,
        m.role,
        m.content,
        m.toolCalls?.length ? JSON.stringify(m.toolCalls) : null,
        m.toolCallId ?? null,
        countTokens(m),
        m.createdAt ?? now,
      ]),
    );
  }
}

/** A conversation begins when its first message arrived (the control page shows the tool calls since then), but never
 * before the previous one ended (a message that waited behind /new). When another process creates it at the same
 * moment (PostgreSQL), its conversation wins the unique index and is used. */
async function begin(db: Sql, sessionKey: string, messages: StoredMessage[]): Promise<number> {
  const now = Date.now();
  const first = messages.reduce((t, m) => Math.min(t, m.createdAt ?? now), now);
  const ended = await total(db, "SELECT max(archived_at) FROM conversations WHERE session_key = $1", [sessionKey]);
  const created = await scalar<number>(
    db,
    "INSERT INTO conversations (session_key, created_at) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING id",
    [sessionKey, Math.max(first, ended)],
  );
  return created ?? ((await openConversation(db, sessionKey)) as number);
}

const OPEN = "SELECT id FROM conversations WHERE session_key = $1 AND archived_at IS NULL ORDER BY id DESC LIMIT 1";

/** The id of the session's open conversation, if it has one (never creates it). */
export function openConversation(db: Sql, sessionKey: string): Promise<number | undefined> {
  return scalar<number>(db, OPEN, [sessionKey]);
}
