import type { TailJournal } from "./outbox-tail.js";
import type { DeliveryReceipt, InboundMessage, OutboundMessage } from "./types.js";

/** Why a send failed, as a channel tells the outbox sender; anything else thrown is transient and retried. */
export class DeliveryError extends Error {
  /** Refused for good (403, chat not found, malformed): retrying cannot help. */
  readonly permanent: boolean;
  /** 429's retry_after. */
  readonly retryAfterMs?: number;

  constructor(message: string, options: { permanent?: boolean; retryAfterMs?: number; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = "DeliveryError";
    this.permanent = options.permanent ?? false;
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** What a channel's handler is told about one outbox row, sent part by part (long text, attachments): `partsSent` parts
 * reached the platform on an earlier attempt (or before a restart) and are skipped; `markPartSent` records each further
 * part the platform accepts before the next goes out (`last`: the row is sent in the same write; ids serve an edit). */
export interface Delivery {
  readonly partsSent: number;
  markPartSent(last?: boolean, messageIds?: string[]): Promise<void>;
  /** Aborted when the channel stops. */
  readonly signal: AbortSignal;
}

/** Sends one message, throwing to fail the attempt; a receipt with `refused` is a refusal too. */
export type OutboundHandler = (
  msg: OutboundMessage,
  delivery: Delivery,
  // biome-ignore lint/suspicious/noConfusingVoidType: a handler with nothing to report returns Promise<void>.
) => Promise<DeliveryReceipt | undefined | void>;

export interface OutboxRow {
  id: number;
  msg: OutboundMessage;
  partsSent: number;
  /** The platform's ids of the parts already sent. */
  messageIds?: string[];
  attempts: number;
  createdAt: number;
  nextAttemptAt: number;
}

/** The store's bookkeeping behind the bus: a crash loses no accepted message and resends no delivered reply. */
export interface BusJournal extends TailJournal {
  /** Records an inbound message; false when its id was seen before (a platform replay). */
  acceptInbound(msg: InboundMessage): Promise<boolean>;
  /** Records an outbound message as pending; its outbox id. */
  recordOutbound(msg: OutboundMessage): Promise<number>;
  /** The oldest pending row of each chat of `channel` (a route), oldest first: what may be sent next. */
  outboxHeads(channel: string): Promise<OutboxRow[]>;
  /** `messageIds`: every part's so far. */
  markOutboundPartSent(id: number, partsSent: number, messageIds?: string[]): Promise<void>;
  /** Records the row as sent (with `partsSent`, when given, in the same write) and the platform's ids of its parts. */
  markOutboundSent(id: number, partsSent?: number, messageIds?: string[]): Promise<void>;
  /** What a row posted, if it was sent to the same chat as `to` (the message an edit replaces). */
  postedMessageIds(
    id: number,
    to: Pick<OutboundMessage, "channel" | "chatId" | "threadId">,
  ): Promise<string[] | undefined>;
  /** Counts a failed attempt and sets when the row is tried again. */
  deferOutbound(id: number, nextAttemptAt: number, error: string): Promise<void>;
  deadLetterOutbound(id: number, error: string): Promise<void>;
}

export interface RetryTiming {
  /** First pause after a transient failure; doubles per failure up to maxDelayMs, with jitter. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** A row still failing this long after it was recorded is dead-lettered. */
  deadLetterAfterMs: number;
  /** How long stop() lets a running send finish before aborting it. */
  stopGraceMs: number;
}

/** The pause after `failures` failures: retry_after as given, else doubling, capped, jittered so none go in lockstep. */
export function retryDelay(
  failures: number,
  timing: Pick<RetryTiming, "baseDelayMs" | "maxDelayMs">,
  retryAfterMs?: number,
  random: () => number = Math.random,
): number {
  if (retryAfterMs !== undefined) return retryAfterMs;
  const ceiling = Math.min(timing.maxDelayMs, timing.baseDelayMs * 2 ** Math.max(0, failures - 1));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/** A longer reply goes out as a Markdown file with a note instead of dozens of messages: it stays readable, and
 * formatting and splitting it on the event loop (marked overflows on megabytes) stay bounded. */
export const LONG_REPLY_CHARS = 32_000;

export function longReplyFile(text: string): { name: string; data: Buffer; note: string } {
  const note = `The answer is long (${text.length.toLocaleString("en")} characters): it is in this file.`;
  return { name: "reply.md", data: Buffer.from(text), note };
}
