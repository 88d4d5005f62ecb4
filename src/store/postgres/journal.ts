import type pg from "pg";
import type { OutboxRow } from "../../bus/delivery.js";
import type { ChannelName, InboundMessage, OutboundMessage } from "../../bus/types.js";
import { inboxId, type OutboxRecord, toOutboxRow, turnSoFar } from "../rows.js";
import type { JournalStore, PendingOutbound, StoredMessage, TurnSoFar, TurnStepStore, TurnStore } from "../store.js";
import { appendMessages, archiveConversation, type CountTokens } from "./conversations.js";
import { type Db, scalar, transaction } from "./db.js";

/** Channels a process LISTENs on: another process recorded something for it. */
export const NOTIFY_OUTBOX = "pincer_outbox";
export const NOTIFY_INBOX = "pincer_inbox";

export class PostgresJournal implements JournalStore {
  constructor(private readonly pool: pg.Pool) {}

  acceptInbound(msg: InboundMessage): Promise<boolean> {
    return acceptInbound(this.pool, msg);
  }

  async recordTurnStart(msg: InboundMessage): Promise<number> {
    return (
      (await scalar<number>(this.pool, "UPDATE inbox SET starts = starts + 1 WHERE id = $1 RETURNING starts", [
        inboxId(msg),
      ])) ?? 1
    );
  }

  async forgetTurnStart(msg: InboundMessage): Promise<void> {
    await this.pool.query("UPDATE inbox SET starts = greatest(0, starts - 1) WHERE id = $1", [inboxId(msg)]);
  }

  async recordModelWait(msg: InboundMessage, triedAt: number): Promise<{ tries: number; since: number }> {
    const { rows } = await this.pool.query<{ tries: number; since: number }>(
      `UPDATE inbox SET model_tries = model_tries + 1, model_failed_at = coalesce(model_failed_at, $1)
        WHERE id = $2 RETURNING model_tries AS tries, model_failed_at AS since`,
      [triedAt, inboxId(msg)],
    );
    return rows[0] ?? { tries: 1, since: triedAt };
  }

  completeInbound(msg: InboundMessage): Promise<void> {
    return transaction(this.pool, (tx) => completeInbound(tx, msg));
  }

  async isPending(msg: Pick<InboundMessage, "channel" | "chatId" | "id">): Promise<boolean> {
    const { rowCount } = await this.pool.query("SELECT 1 FROM inbox WHERE id = $1 AND status = 'pending'", [
      inboxId(msg),
    ]);
    return rowCount === 1;
  }

  async pendingInbound(): Promise<InboundMessage[]> {
    const { rows } = await this.pool.query<{ payload: string }>(
      "SELECT payload FROM inbox WHERE status = 'pending' ORDER BY received_at, seq",
    );
    return rows.map((row) => JSON.parse(row.payload) as InboundMessage);
  }

  recordOutbound(msg: OutboundMessage): Promise<number> {
    return recordOutbound(this.pool, msg);
  }

  async outboxHeads(channel: ChannelName): Promise<OutboxRow[]> {
    const { rows } = await this.pool.query<OutboxRecord>(
      `SELECT DISTINCT ON (chat_key) id, payload, parts_sent, attempts, created_at, next_attempt_at FROM outbox
        WHERE channel = $1 AND status = 'pending' ORDER BY chat_key, id`,
      [channel],
    );
    return rows.sort((a, b) => a.id - b.id).map(toOutboxRow);
  }

  async pendingOutbound(channel: ChannelName): Promise<PendingOutbound[]> {
    const { rows } = await this.pool.query<OutboxRecord>(
      "SELECT id, payload, parts_sent FROM outbox WHERE channel = $1 AND status = 'pending' ORDER BY id",
      [channel],
    );
    return rows.map((row) => ({
      id: row.id,
      msg: JSON.parse(row.payload) as OutboundMessage,
      partsSent: row.parts_sent,
    }));
  }

  async markOutboundPartSent(id: number, partsSent: number): Promise<void> {
    await this.pool.query("UPDATE outbox SET parts_sent = $1 WHERE id = $2", [partsSent, id]);
  }

  async markOutboundSent(id: number, partsSent?: number): Promise<void> {
    await this.pool.query(
      "UPDATE outbox SET status = 'sent', finished_at = $1, parts_sent = coalesce($2, parts_sent) WHERE id = $3",
      [Date.now(), partsSent ?? null, id],
    );
  }

  async deferOutbound(id: number, nextAttemptAt: number, error: string): Promise<void> {
    await this.pool.query(
      "UPDATE outbox SET attempts = attempts + 1, next_attempt_at = $1, last_error = $2 WHERE id = $3",
      [nextAttemptAt, error.slice(0, 500), id],
    );
  }

  async deadLetterOutbound(id: number, error: string): Promise<void> {
    await this.pool.query("UPDATE outbox SET status = 'dead', last_error = $1, finished_at = $2 WHERE id = $3", [
      error.slice(0, 500),
      Date.now(),
      id,
    ]);
  }

  async prune(maxAgeMs: number, now = Date.now()): Promise<void> {
    await this.pool.query("DELETE FROM inbox WHERE status = 'done' AND received_at < $1", [now - maxAgeMs]);
    await this.pool.query("DELETE FROM outbox WHERE status = 'sent' AND finished_at < $1", [now - maxAgeMs]);
  }
}

export async function acceptInbound(db: Db, msg: InboundMessage): Promise<boolean> {
  const { rowCount } = await db.query(
    `WITH accepted AS (
       INSERT INTO inbox (id, session_key, payload, received_at) VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING RETURNING id
     ) SELECT pg_notify('${NOTIFY_INBOX}', $2) FROM accepted`,
    [inboxId(msg), msg.sessionKey, JSON.stringify(msg), msg.receivedAt],
  );
  return rowCount === 1;
}

async function completeInbound(db: Db, msg: InboundMessage): Promise<void> {
  await db.query("UPDATE inbox SET status = 'done' WHERE id = $1", [inboxId(msg)]);
  // A finished turn's steps are in the conversation now; its journal is not needed again.
  await db.query("DELETE FROM turn_steps WHERE inbox_id = $1", [inboxId(msg)]);
}

/** Records the row and tells every listening process which channel has something to send. */
async function recordOutbound(db: Db, msg: OutboundMessage): Promise<number> {
  const chatKey = msg.threadId ? `${msg.chatId}:thread:${msg.threadId}` : msg.chatId;
  const { rows } = await db.query<{ id: number }>(
    `WITH row AS (
       INSERT INTO outbox (channel, chat_key, payload, created_at) VALUES ($1, $2, $3, $4) RETURNING id
     ) SELECT id, pg_notify('${NOTIFY_OUTBOX}', $1) FROM row`,
    [msg.channel, chatKey, JSON.stringify(msg), Date.now()],
  );
  return rows[0].id;
}

export class PostgresTurnSteps implements TurnStepStore {
  constructor(private readonly pool: pg.Pool) {}

  assistant(msg: InboundMessage, message: StoredMessage): Promise<void> {
    return this.insert(msg, "assistant", null, JSON.stringify(message));
  }

  started(msg: InboundMessage, callId: string): Promise<void> {
    return this.insert(msg, "started", callId, null);
  }

  result(msg: InboundMessage, callId: string, content: string): Promise<void> {
    return this.insert(msg, "result", callId, content);
  }

  async load(msg: InboundMessage): Promise<TurnSoFar> {
    const { rows } = await this.pool.query<{ kind: string; call_id: string | null; payload: string | null }>(
      "SELECT kind, call_id, payload FROM turn_steps WHERE inbox_id = $1 ORDER BY id",
      [inboxId(msg)],
    );
    return turnSoFar(rows);
  }

  private async insert(
    msg: InboundMessage,
    kind: string,
    callId: string | null,
    payload: string | null,
  ): Promise<void> {
    await this.pool.query(
      "INSERT INTO turn_steps (inbox_id, kind, call_id, payload, created_at) VALUES ($1, $2, $3, $4, $5)",
      [inboxId(msg), kind, callId, payload, Date.now()],
    );
  }
}

/** The end of a turn as one transaction, so a crash keeps all of it or none. */
export class PostgresTurns implements TurnStore {
  constructor(
    private readonly pool: pg.Pool,
    private readonly countTokens: CountTokens,
  ) {}

  finishTurn(
    msg: InboundMessage,
    messages: StoredMessage[],
    out: OutboundMessage | undefined,
  ): Promise<number | undefined> {
    return transaction(this.pool, async (tx) => {
      if (messages.length > 0) await appendMessages(tx, this.countTokens, msg.sessionKey, messages);
      await completeInbound(tx, msg);
      return out ? recordOutbound(tx, out) : undefined;
    });
  }

  setAside(messages: InboundMessage[], out: OutboundMessage, archive?: string): Promise<number> {
    return transaction(this.pool, async (tx) => {
      if (archive !== undefined) await archiveConversation(tx, archive);
      for (const msg of messages) await completeInbound(tx, msg);
      return recordOutbound(tx, out);
    });
  }
}
