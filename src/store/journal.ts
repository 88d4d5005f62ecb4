import type { BusJournal } from "../bus/bus.js";
import type { ChannelName, InboundMessage, OutboundMessage } from "../bus/types.js";
import type { Database } from "./database.js";

/** The inbox and outbox in SQLite: accepted messages survive a crash, delivered replies are not resent. */
export class SqliteJournal implements BusJournal {
  constructor(private readonly db: Database) {}

  acceptInbound(msg: InboundMessage): boolean {
    const result = this.db
      .prepare("INSERT OR IGNORE INTO inbox (id, session_key, payload, received_at) VALUES (?, ?, ?, ?)")
      .run(inboxId(msg), msg.sessionKey, JSON.stringify(msg), msg.receivedAt);
    return result.changes === 1;
  }

  completeInbound(msg: InboundMessage): void {
    this.db.prepare("UPDATE inbox SET status = 'done' WHERE id = ?").run(inboxId(msg));
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
    return Number(
      this.db
        .prepare("INSERT INTO outbox (channel, payload, created_at) VALUES (?, ?, ?)")
        .run(msg.channel, JSON.stringify(msg), Date.now()).lastInsertRowid,
    );
  }

  markOutboundSent(id: number): void {
    this.db.prepare("UPDATE outbox SET status = 'sent' WHERE id = ?").run(id);
  }

  pendingOutbound(channel: ChannelName): Array<{ id: number; msg: OutboundMessage }> {
    const rows = this.db
      .prepare("SELECT id, payload FROM outbox WHERE channel = ? AND status = 'pending' ORDER BY id")
      .all(channel) as Array<{ id: number; payload: string }>;
    return rows.map((row) => ({ id: row.id, msg: JSON.parse(row.payload) as OutboundMessage }));
  }

  /** Keeps the journal from growing forever: finished rows older than `maxAgeMs` go. */
  prune(maxAgeMs: number, now = Date.now()): void {
    this.db.prepare("DELETE FROM inbox WHERE status = 'done' AND received_at < ?").run(now - maxAgeMs);
    this.db.prepare("DELETE FROM outbox WHERE status = 'sent' AND created_at < ?").run(now - maxAgeMs);
  }
}

/** Platform message ids are only unique per chat (Telegram) or per channel. */
function inboxId(msg: Pick<InboundMessage, "channel" | "chatId" | "id">): string {
  return `${msg.channel}:${msg.chatId}:${msg.id}`;
}
