import type { BusJournal, OutboxRow, OutboxState } from "./delivery.js";
import { type ChannelName, type InboundMessage, type OutboundMessage, sessionKeyOf } from "./types.js";

/** The journal of a bus without a database (tool tests, benchmarks): the same rules, kept in memory. */
export class MemoryJournal implements BusJournal {
  private readonly seen = new Set<string>();
  private readonly rows = new Map<number, OutboxRow & { dead?: string }>();
  private nextId = 1;

  acceptInbound(msg: InboundMessage): boolean {
    const key = `${msg.channel}:${msg.chatId}:${msg.id}`;
    if (this.seen.has(key)) return false;
    this.seen.add(key);
    return true;
  }

  recordOutbound(msg: OutboundMessage): number {
    const id = this.nextId++;
    this.rows.set(id, { id, msg, partsSent: 0, attempts: 0, createdAt: Date.now(), nextAttemptAt: 0 });
    return id;
  }

  outboxHeads(channel: ChannelName): OutboxRow[] {
    const heads = new Map<string, OutboxRow>();
    for (const row of this.rows.values()) {
      const chat = sessionKeyOf(channel, row.msg.chatId, row.msg.threadId);
      if (row.msg.channel === channel && row.dead === undefined && !heads.has(chat)) heads.set(chat, { ...row });
    }
    return [...heads.values()];
  }

  markOutboundPartSent(id: number, partsSent: number): void {
    const row = this.rows.get(id);
    if (row) row.partsSent = partsSent;
  }

  markOutboundSent(id: number): void {
    this.rows.delete(id);
  }

  deferOutbound(id: number, nextAttemptAt: number): void {
    const row = this.rows.get(id);
    if (row) Object.assign(row, { attempts: row.attempts + 1, nextAttemptAt });
  }

  deadLetterOutbound(id: number, error: string): void {
    const row = this.rows.get(id);
    if (row) row.dead = error;
  }

  outboxState(id: number): OutboxState | undefined {
    const row = this.rows.get(id);
    if (!row) return id < this.nextId ? { status: "sent" } : undefined;
    return row.dead === undefined ? { status: "pending" } : { status: "dead", error: row.dead };
  }
}
