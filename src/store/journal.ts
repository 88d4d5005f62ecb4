import type { BusJournal } from "../bus/bus.js";
import type { OutboxRow, OutboxState } from "../bus/delivery.js";
import type { ChannelName, InboundMessage, OutboundMessage } from "../bus/types.js";
import type { Database } from "./database.js";

interface OutboxRecord {
  id: number;
  payload: string;
  parts_sent: number;
  attempts: number;
  created_at: number;
  next_attempt_at: number;
}

/** The inbox and outbox in SQLite: accepted messages survive a crash, delivered replies are not resent. */
export class SqliteJournal implements BusJournal {
  constructor(private readonly db: Database) {}

  acceptInbound(msg: InboundMessage): boolean {
    const result = this.db
      .prepare("INSERT OR IGNORE INTO inbox (id, session_key, payload, received_at) VALUES (?, ?, ?, ?)")
      .run(inboxId(msg), msg.sessionKey, JSON.stringify(msg), msg.receivedAt);
    return result.changes === 1;
  }

  /**
   * Counts a start of the message's turn and returns how many there have been, this one included.
   * A count above one means earlier turns were cut off by a crash: the daemon died during them.
   */
  recordTurnStart(msg: InboundMessage): number {
    const starts = this.db
      .prepare("UPDATE inbox SET starts = starts + 1 WHERE id = ? RETURNING starts")
      .pluck()
      .get(inboxId(msg)) as number | undefined;
    return starts ?? 1;
  }

  /** Takes back a start: the turn was stopped by an orderly shutdown, not by a crash. */
  forgetTurnStart(msg: InboundMessage): void {
    this.db.prepare("UPDATE inbox SET starts = max(0, starts - 1) WHERE id = ?").run(inboxId(msg));
  }

  /**
   * Counts a try of the message that found the model unavailable (begun at `triedAt`); returns
   * the tries so far and when the first of them began.
   */
  recordModelWait(msg: InboundMessage, triedAt: number): { tries: number; since: number } {
    const row = this.db
      .prepare(
        `UPDATE inbox SET model_tries = model_tries + 1, model_failed_at = coalesce(model_failed_at, ?)
         WHERE id = ? RETURNING model_tries AS tries, model_failed_at AS since`,
      )
      .get(triedAt, inboxId(msg)) as { tries: number; since: number } | undefined;
    return row ?? { tries: 1, since: triedAt };
  }

  completeInbound(msg: InboundMessage): void {
    this.db.prepare("UPDATE inbox SET status = 'done' WHERE id = ?").run(inboxId(msg));
    // A finished turn's steps are in the conversation now; its journal is not needed again.
    this.db.prepare("DELETE FROM turn_steps WHERE inbox_id = ?").run(inboxId(msg));
  }

  /** True while the message is accepted but its turn has not finished. */
  isPending(msg: Pick<InboundMessage, "channel" | "chatId" | "id">): boolean {
    return this.db.prepare("SELECT 1 FROM inbox WHERE id = ? AND status = 'pending'").get(inboxId(msg)) !== undefined;
  }

  /** Messages accepted but never finished, oldest first: the turns to run again after a restart. */
  pendingInbound(): InboundMessage[] {
    return (
      this.db
        .prepare("SELECT payload FROM inbox WHERE status = 'pending' ORDER BY received_at, rowid")
        .pluck()
        .all() as string[]
    ).map((payload) => JSON.parse(payload) as InboundMessage);
  }

  recordOutbound(msg: OutboundMessage): number {
    const chatKey = msg.threadId ? `${msg.chatId}:thread:${msg.threadId}` : msg.chatId;
    return Number(
      this.db
        .prepare("INSERT INTO outbox (channel, chat_key, payload, created_at) VALUES (?, ?, ?, ?)")
        .run(msg.channel, chatKey, JSON.stringify(msg), Date.now()).lastInsertRowid,
    );
  }

  outboxHeads(channel: ChannelName): OutboxRow[] {
    const rows = this.db
      .prepare(
        `SELECT id, payload, parts_sent, attempts, created_at, next_attempt_at FROM outbox
         WHERE id IN (SELECT min(id) FROM outbox WHERE channel = ? AND status = 'pending' GROUP BY chat_key)
         ORDER BY id`,
      )
      .all(channel) as OutboxRecord[];
    return rows.map((row) => ({
      id: row.id,
      msg: JSON.parse(row.payload) as OutboundMessage,
      partsSent: row.parts_sent,
      attempts: row.attempts,
      createdAt: row.created_at,
      nextAttemptAt: row.next_attempt_at,
    }));
  }

  /** Every pending row of a channel, oldest first (for status and tests). */
  pendingOutbound(channel: ChannelName): Array<{ id: number; msg: OutboundMessage; partsSent: number }> {
    const rows = this.db
      .prepare("SELECT id, payload, parts_sent FROM outbox WHERE channel = ? AND status = 'pending' ORDER BY id")
      .all(channel) as Array<{ id: number; payload: string; parts_sent: number }>;
    return rows.map((row) => ({
      id: row.id,
      msg: JSON.parse(row.payload) as OutboundMessage,
      partsSent: row.parts_sent,
    }));
  }

  markOutboundPartSent(id: number, partsSent: number): void {
    this.db.prepare("UPDATE outbox SET parts_sent = ? WHERE id = ?").run(partsSent, id);
  }

  markOutboundSent(id: number, partsSent?: number): void {
    this.db
      .prepare("UPDATE outbox SET status = 'sent', finished_at = ?, parts_sent = coalesce(?, parts_sent) WHERE id = ?")
      .run(Date.now(), partsSent ?? null, id);
  }

  deferOutbound(id: number, nextAttemptAt: number, error: string): void {
    this.db
      .prepare("UPDATE outbox SET attempts = attempts + 1, next_attempt_at = ?, last_error = ? WHERE id = ?")
      .run(nextAttemptAt, error.slice(0, 500), id);
  }

  deadLetterOutbound(id: number, error: string): void {
    this.db
      .prepare("UPDATE outbox SET status = 'dead', last_error = ?, finished_at = ? WHERE id = ?")
      .run(error.slice(0, 500), Date.now(), id);
  }

  outboxState(id: number): OutboxState | undefined {
    const row = this.db.prepare("SELECT status, last_error FROM outbox WHERE id = ?").get(id) as
      | { status: "pending" | "sent" | "dead"; last_error: string | null }
      | undefined;
    if (row?.status === "dead") return { status: "dead", error: row.last_error ?? "" };
    return row && { status: row.status };
  }

  /** Keeps the journal from growing forever: finished rows older than `maxAgeMs` go. */
  prune(maxAgeMs: number, now = Date.now()): void {
    this.db.prepare("DELETE FROM inbox WHERE status = 'done' AND received_at < ?").run(now - maxAgeMs);
    this.db.prepare("DELETE FROM outbox WHERE status = 'sent' AND finished_at < ?").run(now - maxAgeMs);
  }
}

/** Platform message ids are only unique per chat (Telegram) or per channel. */
export function inboxId(msg: Pick<InboundMessage, "channel" | "chatId" | "id">): string {
  return `${msg.channel}:${msg.chatId}:${msg.id}`;
}
