import type { BusJournal, OutboxRow } from "../bus/delivery.js";
import { inboundFromStored } from "../bus/stored-inbound.js";
import { type InboundMessage, type OutboundMessage, routeOf } from "../bus/types.js";
import { FencedOutError } from "./cluster.js";
import { appendMessages, archiveConversation, type CountTokens } from "./conversations.js";
import { exists, insert, type Sql, SqlGroup, scalar, total, upsert } from "./sql.js";
import type { StoredMessage, TurnSoFar } from "./types.js";

/** Channels a process LISTENs on (PostgreSQL): another process recorded something for it. */
export const NOTIFY_OUTBOX = "pincer_outbox";
export const NOTIFY_INBOX = "pincer_inbox";

/** Platform message ids are only unique per chat (Telegram) or per channel, and two bots in one group see the same. */
export function inboxId(msg: Pick<InboundMessage, "channel" | "account" | "chatId" | "id">): string {
  return `${routeOf(msg)}:${msg.chatId}:${msg.id}`;
}

// A pending row's parts sent are counted beside it (013-outbox-progress: SQLite rewrites a whole row on any update).
const PARTS_SENT = `CASE WHEN p.parts_sent > outbox.parts_sent THEN p.parts_sent ELSE outbox.parts_sent END AS "partsSent"`;
const WITH_PROGRESS = "outbox LEFT JOIN outbox_progress p ON p.id = outbox.id";

/** A row's platform message ids, kept as one comma-separated column (both engines, no JSON functions). */
const joinIds = (ids: string[] | undefined) => (ids && ids.length > 0 ? ids.join(",") : null);
const splitIds = (ids: string | null | undefined) => (ids ? ids.split(",") : []);

type ChatOf = Pick<OutboundMessage, "channel" | "account" | "chatId" | "threadId">;

export const chatKeyOf = (msg: ChatOf) => (msg.threadId ? `${msg.chatId}:thread:${msg.threadId}` : msg.chatId);

/** The inbox and outbox: accepted messages survive a crash, delivered replies are not resent. */
export class SqlJournal extends SqlGroup implements BusJournal {
  acceptInbound = (msg: InboundMessage) => acceptInbound(this.db, msg);

  /** Counts a start of the message's turn, returning the starts so far: more than one means a crash cut one off. */
  async recordTurnStart(msg: InboundMessage): Promise<number> {
    const starts = "UPDATE inbox SET starts = starts + 1 WHERE id = $1 RETURNING starts";
    return (await scalar<number>(this.db, starts, [inboxId(msg)])) ?? 1;
  }

  /** Takes back a start: the turn was stopped by an orderly shutdown, not by a crash. */
  async forgetTurnStart(msg: InboundMessage): Promise<void> {
    const forget = "UPDATE inbox SET starts = CASE WHEN starts > 0 THEN starts - 1 ELSE 0 END WHERE id = $1";
    await this.db.run(forget, [inboxId(msg)]);
  }

  /** Counts a try (at `triedAt`) that found the model unavailable; returns the tries and when the first began. */
  async recordModelWait(msg: InboundMessage, triedAt: number): Promise<{ tries: number; since: number }> {
    const [row] = await this.db.rows<{ tries: number; since: number }>(
      `UPDATE inbox SET model_tries = model_tries + 1, model_failed_at = coalesce(model_failed_at, $1)
        WHERE id = $2 RETURNING model_tries AS tries, model_failed_at AS since`,
      [triedAt, inboxId(msg)],
    );
    return row ?? { tries: 1, since: triedAt };
  }

  completeInbound = (msg: InboundMessage) => this.db.transaction((tx) => completeInbound(tx, msg));

  /** Keeps the platform ids of the draft the message's reply is shown in while it is written. */
  async recordDraft(msg: InboundMessage, messageIds: string[]): Promise<void> {
    await this.db.run("UPDATE inbox SET draft = $1 WHERE id = $2", [JSON.stringify(messageIds), inboxId(msg)]);
  }

  /** The draft's platform ids (from before a restart); empty when it has none. */
  async draftOf(msg: InboundMessage): Promise<string[]> {
    const draft = await scalar<string | null>(this.db, "SELECT draft FROM inbox WHERE id = $1", [inboxId(msg)]);
    const ids: unknown = draft ? JSON.parse(draft) : [];
    return Array.isArray(ids) ? ids.filter((id): id is string => typeof id === "string") : [];
  }

  isPending = (msg: Pick<InboundMessage, "channel" | "account" | "chatId" | "id">) =>
    exists(this.db, "SELECT 1 FROM inbox WHERE id = $1 AND status = 'pending'", [inboxId(msg)]);

  /** Messages accepted but never finished, oldest first: the turns to run again after a restart. */
  async pendingInbound(): Promise<InboundMessage[]> {
    const rows = await this.db.rows<{ payload: string }>(
      `SELECT payload FROM inbox WHERE status = 'pending' ORDER BY received_at, ${this.db.seq}`,
    );
    return rows.map((row) => inboundFromStored(row.payload));
  }

  recordOutbound = (msg: OutboundMessage) => recordOutbound(this.db, msg);

  outboxHeads = (channel: string) =>
    this.outbox(
      "outbox.id IN (SELECT min(id) FROM outbox WHERE channel = $1 AND status = 'pending' GROUP BY chat_key)",
      channel,
    );

  /** Rows of `channel` after `afterId`, pending or sent, oldest first (a web page's view, see OutboxTail). */
  async outboxAfter(channel: string, afterId: number): Promise<Array<{ id: number; msg: OutboundMessage }>> {
    const sql = "SELECT id, payload FROM outbox WHERE id > $1 AND channel = $2 ORDER BY id";
    const rows = await this.db.rows<{ id: number; payload: string }>(sql, [afterId, channel]);
    return rows.map((row) => ({ id: row.id, msg: JSON.parse(row.payload) as OutboundMessage }));
  }

  lastOutboxId = () => total(this.db, "SELECT max(id) FROM outbox");

  pendingOutbound = (channel: string) => this.outbox("channel = $1 AND status = 'pending'", channel);

  private async outbox(where: string, channel: string): Promise<OutboxRow[]> {
    const rows = await this.db.rows<Omit<OutboxRow, "msg" | "messageIds"> & { msg: string; ids: string | null }>(
      `SELECT outbox.id, payload AS msg, ${PARTS_SENT}, p.message_ids AS ids, attempts, created_at AS "createdAt",
              next_attempt_at AS "nextAttemptAt" FROM ${WITH_PROGRESS} WHERE ${where} ORDER BY outbox.id`,
      [channel],
    );
    return rows.map(({ msg, ids, ...row }) => ({
      ...row,
      msg: JSON.parse(msg) as OutboundMessage,
      ...(ids ? { messageIds: splitIds(ids) } : {}),
    }));
  }

  async markOutboundPartSent(id: number, partsSent: number, messageIds?: string[]): Promise<void> {
    await this.db.run(...upsert("outbox_progress", { id, partsSent, messageIds: joinIds(messageIds) }, ["id"]));
  }

  async markOutboundSent(id: number, partsSent?: number, messageIds?: string[]): Promise<void> {
    await this.db.run(
      `UPDATE outbox SET status = 'sent', finished_at = $1, parts_sent = coalesce($2, parts_sent), message_ids = $3
        WHERE id = $4`,
      [Date.now(), partsSent ?? null, joinIds(messageIds), id],
    );
  }

  async postedMessageIds(id: number, to: ChatOf): Promise<string[] | undefined> {
    const [row] = await this.db.rows<{ message_ids: string | null }>(
      "SELECT message_ids FROM outbox WHERE id = $1 AND status = 'sent' AND channel = $2 AND chat_key = $3",
      [id, routeOf(to), chatKeyOf(to)],
    );
    return row && splitIds(row.message_ids);
  }

  async deferOutbound(id: number, nextAttemptAt: number, error: string): Promise<void> {
    const defer = "UPDATE outbox SET attempts = attempts + 1, next_attempt_at = $1, last_error = $2 WHERE id = $3";
    await this.db.run(defer, [nextAttemptAt, error.slice(0, 500), id]);
  }

  async deadLetterOutbound(id: number, error: string): Promise<void> {
    const dead = "UPDATE outbox SET status = 'dead', last_error = $1, finished_at = $2 WHERE id = $3";
    await this.db.run(dead, [error.slice(0, 500), Date.now(), id]);
  }

  /** Keeps the journal from growing forever: finished rows older than `maxAgeMs` go. */
  async prune(maxAgeMs: number, now = Date.now()): Promise<void> {
    await this.db.run("DELETE FROM inbox WHERE status = 'done' AND received_at < $1", [now - maxAgeMs]);
    await this.db.run("DELETE FROM outbox WHERE status = 'sent' AND finished_at < $1", [now - maxAgeMs]);
  }
}

/** Accepts a message into the inbox and tells the cluster; false for one seen before. */
export async function acceptInbound(db: Sql, msg: InboundMessage): Promise<boolean> {
  const { sessionKey, receivedAt } = msg;
  const row = { id: inboxId(msg), sessionKey, payload: JSON.stringify(msg), receivedAt };
  const accepted = await db.run(...insert("inbox", row, undefined, "ON CONFLICT (id) DO NOTHING"));
  if (accepted === 1) await db.notify(NOTIFY_INBOX);
  return accepted === 1;
}

/** Marks the message done (its turn's steps go with it), in the caller's transaction. */
async function completeInbound(db: Sql, msg: InboundMessage): Promise<void> {
  const changed = await db.run("UPDATE inbox SET status = 'done' WHERE id = $1 AND status = 'pending'", [inboxId(msg)]);
  // Done already: another process answered it while this one was paused past its lease; the late turn writes nothing.
  if (changed === 0 && (await exists(db, "SELECT 1 FROM inbox WHERE id = $1", [inboxId(msg)]))) {
    throw new FencedOutError({ name: `turn:${msg.sessionKey}`, epoch: 0 });
  }
  // A finished turn's steps are in the conversation now; its journal is not needed again.
  await db.run("DELETE FROM turn_steps WHERE inbox_id = $1", [inboxId(msg)]);
}

/** Records the row (its `channel` is the bot's route) and wakes every listening process's senders. */
export async function recordOutbound(db: Sql, msg: OutboundMessage): Promise<number> {
  const row = { channel: routeOf(msg), chatKey: chatKeyOf(msg), payload: JSON.stringify(msg), createdAt: Date.now() };
  const id = await scalar<number>(db, ...insert("outbox", row, undefined, "RETURNING id"));
  await db.notify(NOTIFY_OUTBOX);
  return id as number;
}

/** The turn's journal, each row written before the next step starts: a turn cut short by a crash resumes there. */
export class SqlTurnSteps extends SqlGroup {
  assistant = (msg: InboundMessage, message: StoredMessage) =>
    this.insert(msg, "assistant", null, JSON.stringify(message));
  started = (msg: InboundMessage, callId: string) => this.insert(msg, "started", callId, null);
  result = (msg: InboundMessage, callId: string, content: string) => this.insert(msg, "result", callId, content);

  async load(msg: InboundMessage): Promise<TurnSoFar> {
    const rows = await this.db.rows<{ kind: string; call_id: string | null; payload: string | null }>(
      "SELECT kind, call_id, payload FROM turn_steps WHERE inbox_id = $1 ORDER BY id",
      [inboxId(msg)],
    );
    const produced: StoredMessage[] = [];
    const interrupted = new Set<string>();
    for (const row of rows) {
      if (row.kind === "assistant") produced.push(JSON.parse(row.payload ?? "{}") as StoredMessage);
      else if (row.kind === "started") interrupted.add(row.call_id ?? "");
      else {
        interrupted.delete(row.call_id ?? "");
        produced.push({ role: "tool", content: row.payload, toolCallId: row.call_id ?? "" });
      }
    }
    return { produced, interrupted };
  }

  private async insert(msg: InboundMessage, kind: string, callId: string | null, payload: string | null) {
    await this.db.run(...insert("turn_steps", { inboxId: inboxId(msg), kind, callId, payload, createdAt: Date.now() }));
  }
}

/** The end of a turn as one transaction, so a crash keeps all of it or none. */
export class SqlTurns {
  constructor(
    private readonly db: Sql,
    private readonly countTokens: CountTokens,
  ) {}

  /** Appends the turn's messages, marks the inbound message done and records the reply (its outbox id returned). */
  finishTurn(msg: InboundMessage, messages: StoredMessage[], out: OutboundMessage | undefined) {
    return this.db.transaction(async (tx) => {
      if (messages.length > 0) await appendMessages(tx, this.countTokens, msg.sessionKey, messages);
      await completeInbound(tx, msg);
      return out ? recordOutbound(tx, out) : undefined;
    });
  }

  /** Closes messages /stop or /new set aside with one notice (its outbox id), all or nothing; `archive` ends a chat. */
  setAside(messages: InboundMessage[], out: OutboundMessage, archive?: string): Promise<number> {
    return this.db.transaction(async (tx) => {
      if (archive !== undefined) await archiveConversation(tx, archive);
      for (const msg of messages) await completeInbound(tx, msg);
      return recordOutbound(tx, out);
    });
  }
}
