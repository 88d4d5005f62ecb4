import type { BusJournal, OutboxRow } from "./delivery.js";
import { type ChannelName, type InboundMessage, type OutboundMessage, sessionKeyOf } from "./types.js";

/** The journal of a bus without a database (tool tests, benchmarks): the same rules, kept in memory. */
export class MemoryJournal implements BusJournal {
  private readonly seen = new Set<string>();
  private readonly rows = new Map<number, OutboxRow & { dead?: string }>();
  private readonly posted = new Map<number, { chat: string; messageIds: string[] }>();
  private nextId = 1;

  async acceptInbound(msg: InboundMessage): Promise<boolean> {
    const key = `${msg.channel}:${msg.chatId}:${msg.id}`;
    if (this.seen.has(key)) return false;
    this.seen.add(key);
    return true;
  }

  async recordOutbound(msg: OutboundMessage): Promise<number> {
    const id = this.nextId++;
    this.rows.set(id, { id, msg, partsSent: 0, attempts: 0, createdAt: Date.now(), nextAttemptAt: 0 });
    return id;
  }

  async outboxHeads(channel: ChannelName): Promise<OutboxRow[]> {
    const heads = new Map<string, OutboxRow>();
    for (const row of this.rows.values()) {
      const chat = sessionKeyOf(channel, row.msg.chatId, row.msg.threadId);
      if (row.msg.channel === channel && row.dead === undefined && !heads.has(chat)) heads.set(chat, { ...row });
    }
    return [...heads.values()];
  }

  async markOutboundPartSent(id: number, partsSent: number, messageIds?: string[]): Promise<void> {
    const row = this.rows.get(id);
    if (row) Object.assign(row, { partsSent, messageIds });
  }

  async markOutboundSent(id: number, _partsSent?: number, messageIds?: string[]): Promise<void> {
    const row = this.rows.get(id);
    if (!row) return;
    this.rows.delete(id);
    const { channel, chatId, threadId } = row.msg;
    this.posted.set(id, { chat: sessionKeyOf(channel, chatId, threadId), messageIds: messageIds ?? [] });
  }

  async postedMessageIds(id: number, to: Pick<OutboundMessage, "channel" | "chatId" | "threadId">) {
    const posted = this.posted.get(id);
    return posted?.chat === sessionKeyOf(to.channel, to.chatId, to.threadId) ? posted.messageIds : undefined;
  }

  async deferOutbound(id: number, nextAttemptAt: number): Promise<void> {
    const row = this.rows.get(id);
    if (row) Object.assign(row, { attempts: row.attempts + 1, nextAttemptAt });
  }

  async deadLetterOutbound(id: number, error: string): Promise<void> {
    const row = this.rows.get(id);
    if (row) row.dead = error;
  }
}
