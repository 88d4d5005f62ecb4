import type { OutboxRow } from "../../bus/delivery.js";
import type { ChannelName, InboundMessage, OutboundMessage } from "../../bus/types.js";
import { inboxId, type OutboxRecord, toOutboxRow } from "../rows.js";
import type { JournalStore, PendingOutbound } from "../store.js";
import type { Database } from "./database.js";

/** A pending row's parts sent so far, counted beside it (see migration 29-outbox-progress). */
const PARTS_SENT =
  "max(parts_sent, coalesce((SELECT p.parts_sent FROM outbox_progress p WHERE p.id = outbox.id), 0)) AS parts_sent";

/** The inbox and outbox in SQLite: accepted messages survive a crash, delivered replies are not resent. */
export class SqliteJournal implements JournalStore {
  constructor(private readonly db: Database) {}

  async acceptInbound(msg: InboundMessage): Promise<boolean> {
    return acceptInbound(this.db, msg);
  }

  async recordTurnStart(msg: InboundMessage): Promise<number> {
    const starts = this.db
      .prepare("UPDATE inbox SET starts = starts + 1 WHERE id = ? RETURNING starts")
      .pluck()
      .get(inboxId(msg)) as number | undefined;
    return starts ?? 1;
  }

  async forgetTurnStart(msg: InboundMessage): Promise<void> {
    this.db.prepare("UPDATE inbox SET starts = max(0, starts - 1) WHERE id = ?").run(inboxId(msg));
  }

  async recordModelWait(msg: InboundMessage, triedAt: number): Promise<{ tries: number; since: number }> {
    const row = this.db
      .prepare(
        `UPDATE inbox SET model_tries = model_tries + 1, model_failed_at = coalesce(model_failed_at, ?)
         WHERE id = ? RETURNING model_tries AS tries, model_failed_at AS since`,
      )
      .get(triedAt, inboxId(msg)) as { tries: number; since: number } | undefined;
    return row ?? { tries: 1, since: triedAt };
  }

  async completeInbound(msg: InboundMessage): Promise<void> {
    completeInbound(this.db, msg);
  }

  async isPending(msg: Pick<InboundMessage, "channel" | "chatId" | "id">): Promise<boolean> {
    return this.db.prepare("SELECT 1 FROM inbox WHERE id = ? AND status = 'pending'").get(inboxId(msg)) !== undefined;
  }

  async pendingInbound(): Promise<InboundMessage[]> {
    return (
      this.db
        .prepare("SELECT payload FROM inbox WHERE status = 'pending' ORDER BY received_at, rowid")
        .pluck()
        .all() as string[]
    ).map((payload) => JSON.parse(payload) as InboundMessage);
  }

  async recordOutbound(msg: OutboundMessage): Promise<number> {
    return recordOutbound(this.db, msg);
  }

  async outboxHeads(channel: ChannelName): Promise<OutboxRow[]> {
    const rows = this.db
      .prepare(
        `SELECT id, payload, ${PARTS_SENT}, attempts, created_at, next_attempt_at FROM outbox
         WHERE id IN (SELECT min(id) FROM outbox WHERE channel = ? AND status = 'pending' GROUP BY chat_key)
         ORDER BY id`,
      )
      .all(channel) as OutboxRecord[];
    return rows.map(toOutboxRow);
  }

  async pendingOutbound(channel: ChannelName): Promise<PendingOutbound[]> {
    const rows = this.db
      .prepare(`SELECT id, payload, ${PARTS_SENT} FROM outbox WHERE channel = ? AND status = 'pending' ORDER BY id`)
      .all(channel) as Array<{ id: number; payload: string; parts_sent: number }>;
    return rows.map((row) => ({
      id: row.id,
      msg: JSON.parse(row.payload) as OutboundMessage,
      partsSent: row.parts_sent,
    }));
  }

  async markOutboundPartSent(id: number, partsSent: number): Promise<void> {
    this.db
      .prepare(
        "INSERT INTO outbox_progress (id, parts_sent) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET parts_sent = excluded.parts_sent",
      )
      .run(id, partsSent);
  }

  async markOutboundSent(id: number, partsSent?: number): Promise<void> {
    this.db
      .prepare("UPDATE outbox SET status = 'sent', finished_at = ?, parts_sent = coalesce(?, parts_sent) WHERE id = ?")
      .run(Date.now(), partsSent ?? null, id);
  }

  async deferOutbound(id: number, nextAttemptAt: number, error: string): Promise<void> {
    this.db
      .prepare("UPDATE outbox SET attempts = attempts + 1, next_attempt_at = ?, last_error = ? WHERE id = ?")
      .run(nextAttemptAt, error.slice(0, 500), id);
  }

  async deadLetterOutbound(id: number, error: string): Promise<void> {
    this.db
      .prepare("UPDATE outbox SET status = 'dead', last_error = ?, finished_at = ? WHERE id = ?")
      .run(error.slice(0, 500), Date.now(), id);
  }

  async prune(maxAgeMs: number, now = Date.now()): Promise<void> {
    this.db.prepare("DELETE FROM inbox WHERE status = 'done' AND received_at < ?").run(now - maxAgeMs);
    this.db.prepare("DELETE FROM outbox WHERE status = 'sent' AND finished_at < ?").run(now - maxAgeMs);
  }
}

/** Marks the message done; in the caller's transaction when there is one (finishing a turn). */
export function completeInbound(db: Database, msg: InboundMessage): void {
  db.prepare("UPDATE inbox SET status = 'done' WHERE id = ?").run(inboxId(msg));
  // A finished turn's steps are in the conversation now; its journal is not needed again.
  db.prepare("DELETE FROM turn_steps WHERE inbox_id = ?").run(inboxId(msg));
}

export function recordOutbound(db: Database, msg: OutboundMessage): number {
  const chatKey = msg.threadId ? `${msg.chatId}:thread:${msg.threadId}` : msg.chatId;
  return Number(
    db
      .prepare("INSERT INTO outbox (channel, chat_key, payload, created_at) VALUES (?, ?, ?, ?)")
      .run(msg.channel, chatKey, JSON.stringify(msg), Date.now()).lastInsertRowid,
  );
}

/** Accepts a message into the inbox; false for one seen before. */
export function acceptInbound(db: Database, msg: InboundMessage): boolean {
  const result = db
    .prepare("INSERT OR IGNORE INTO inbox (id, session_key, payload, received_at) VALUES (?, ?, ?, ?)")
    .run(inboxId(msg), msg.sessionKey, JSON.stringify(msg), msg.receivedAt);
  return result.changes === 1;
}
