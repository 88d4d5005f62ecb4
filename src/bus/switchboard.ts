import type { Logger } from "pino";
import { AsyncQueue } from "./async-queue.js";
import { EXPIRED_BUTTON } from "./buttons.js";
import type { BusJournal, OutboundHandler, OutboxRow, RetryTiming } from "./delivery.js";
import type { DraftRenderer, DraftStream, DraftTarget } from "./draft-stream.js";
import { ChannelSender } from "./outbox-sender.js";
import { OutboxTail } from "./outbox-tail.js";
import {
  type ActivityEvent,
  type ButtonTap,
  type DeliveryOutcome,
  errorText,
  type InboundMessage,
  type OutboundMessage,
  routeOf,
  sessionKeyOf,
  type TapAnswer,
  type TapHandler,
} from "./types.js";

interface BusOptions {
  journal: BusJournal;
  retry?: Partial<RetryTiming>;
  log?: Logger;
  /** Who may reach which agent (src/access's gate), asked for every inbound message: the message addressed to its
   * agent's conversation, or undefined for a sender it refused (it sends strangers their code by `send`). */
  gate?: (
    msg: InboundMessage,
    send: (notice: OutboundMessage) => Promise<unknown>,
  ) => Promise<InboundMessage | undefined>;
  /** Where an accepted message goes instead of this process's queue (clustered: the shared inbox is the queue). */
  elsewhere?: (msg: InboundMessage) => void;
}

export const DEFAULT_RETRY_TIMING: RetryTiming = {
  baseDelayMs: 1000,
  maxDelayMs: 30_000,
  deadLetterAfterMs: 24 * 60 * 60 * 1000,
  stopGraceMs: 5000,
};

/** Channels publish inbound messages; outbound ones go into the outbox, and each channel's sender delivers them. */
export class Switchboard {
  readonly inbound = new AsyncQueue<InboundMessage>();
  private readonly retry: RetryTiming;
  /** By route (routeOf): each bot of a channel sends its own rows. */
  private readonly senders = new Map<
    string,
    { sender: ChannelSender; handler: OutboundHandler; drafts?: DraftRenderer }
  >();
  private readonly activityHandlers = new Map<string, Set<(event: ActivityEvent) => void>>();
  /** The caller waiting for the next attempt at an outbox row it recorded, by row id. */
  private readonly waiters = new Map<number, { chat: string; resolve: (outcome: DeliveryOutcome) => void }>();
  private tapHandler: TapHandler | undefined;
  private readonly tails = new Map<string, Set<OutboxTail>>();
  /** What the gate let in, by identity: data cannot forge a place here. */
  private readonly screened = new WeakSet<InboundMessage>();

  constructor(private readonly options: BusOptions) {
    this.retry = { ...DEFAULT_RETRY_TIMING, ...options.retry };
  }

  /** Accepts a message for the agent; false for a replay and for a sender the gate refused (then nothing is stored). A
   * message screenInbound returned (that very object, filled in) is not screened again. */
  async publishInbound(msg: InboundMessage): Promise<boolean> {
    const addressed = this.screened.has(msg) ? msg : await this.screenInbound(msg);
    if (!addressed || !(await this.options.journal.acceptInbound(addressed))) return false;
    this.requeueInbound(addressed);
    return true;
  }

  /** Asks the gate alone: channels call it before downloading a message's files, so a stranger's are never fetched
   * (and a person's files land in the folder of the conversation, the agent's, that they are for). */
  async screenInbound(msg: InboundMessage): Promise<InboundMessage | undefined> {
    const addressed = this.options.gate ? await this.options.gate(msg, (n) => this.publishOutbound(n)) : msg;
    if (addressed) this.screened.add(addressed);
    return addressed;
  }

  /** Queues a message already in the journal (after a restart, a scheduled run) without journaling it again. */
  requeueInbound(msg: InboundMessage): void {
    if (this.options.elsewhere) this.options.elsewhere(msg);
    else this.inbound.push(msg);
  }

  /** Records a message in the outbox and resolves with its first attempt's outcome (failed also while an earlier
   * message to the chat waits for a retry; `queued` without a running channel) and its row, for a later `editOf`.
   * Progress notes are not journaled: after a restart they would describe nothing. */
  async publishOutbound(msg: OutboundMessage): Promise<DeliveryOutcome & { outboxId?: number }> {
    if (msg.kind === "progress") return this.sendProgress(msg);
    const outboxId = await this.options.journal.recordOutbound(msg);
    const route = routeOf(msg);
    if (!this.serves(route)) return { status: "queued", outboxId };
    const chat = sessionKeyOf(msg.channel, msg.chatId, msg.threadId, msg.account);
    const outcome = new Promise<DeliveryOutcome>((resolve) => this.waiters.set(outboxId, { chat, resolve }));
    this.outboundRecorded(route);
    return { ...(await outcome), outboxId };
  }

  serves(channel: string): boolean {
    return this.senders.has(channel);
  }

  /** Tells the channel's sender that a row was recorded (by a transaction that also did other work). */
  outboundRecorded(channel: string): void {
    this.senders.get(channel)?.sender.wake();
    for (const tail of this.tails.get(channel) ?? []) tail.wake();
  }

  /** Hands `deliver` every message recorded for `channel` from now on, whichever process recorded it and whether or not
   * this one sends it (clustered, the web chat's pages on every process show every reply). Returns how to stop. */
  followOutbound(channel: string, deliver: (msg: OutboundMessage) => void): () => void {
    const tail = new OutboxTail(channel, this.options.journal, deliver, this.options.log);
    const tails = this.tails.get(channel) ?? new Set();
    this.tails.set(channel, tails.add(tail));
    return () => tails.delete(tail);
  }

  /** Another process recorded a reply (it says not for which channel): every sender here looks. */
  wakeSenders(): void {
    for (const { sender } of this.senders.values()) sender.wake();
    for (const tails of this.tails.values()) for (const tail of tails) tail.wake();
  }

  /** Resolves once the channel has nothing left to send (for the terminal, which prints and exits). */
  async outboundIdle(channel: string): Promise<void> {
    await this.senders.get(channel)?.sender.idle();
  }

  /** A reply shown while it is written, when the chat's channel runs here and shows drafts. */
  openDraft(target: DraftTarget, onIds: (messageIds: string[]) => Promise<void>): DraftStream | undefined {
    return this.senders.get(routeOf(target))?.drafts?.(target, onIds);
  }

  /** One sender per channel; it starts with what is pending from before a restart. */
  async subscribeOutbound(channel: string, handler: OutboundHandler, drafts?: DraftRenderer): Promise<void> {
    await this.unsubscribeOutbound(channel);
    const sender = new ChannelSender(channel, handler, this.options.journal, this.retry, this.settle, this.options.log);
    this.senders.set(channel, { sender, handler, drafts });
  }

  /** Stops the channel's sender, letting a running send finish; the rest stays in the outbox. */
  async unsubscribeOutbound(channel: string): Promise<void> {
    const entry = this.senders.get(channel);
    this.senders.delete(channel);
    await entry?.sender.stop();
  }

  /** The one handler of button taps (the composition root's router, by data prefix). */
  onTap(handler: TapHandler): void {
    this.tapHandler = handler;
  }

  /** Hands a tap to its handler; resolves with what the tapper alone is told, also when the handler fails. */
  async publishTap(tap: ButtonTap): Promise<TapAnswer> {
    try {
      return (await this.tapHandler?.(tap)) ?? { text: EXPIRED_BUTTON };
    } catch (err) {
      this.options.log?.error({ err: errorText(err), data: tap.data }, "a button press failed");
      return { text: "Something went wrong." };
    }
  }

  publishActivity(event: ActivityEvent): void {
    for (const handler of this.activityHandlers.get(routeOf(event)) ?? []) handler(event);
  }

  onActivity(channel: string, handler: (event: ActivityEvent) => void): () => void {
    const set = this.activityHandlers.get(channel) ?? new Set();
    this.activityHandlers.set(channel, set.add(handler));
    return () => set.delete(handler);
  }

  close(): void {
    this.inbound.close();
  }

  /** Wakes the caller waiting on this row; a failure also answers those queued behind it in the same chat. */
  private readonly settle = (row: OutboxRow, outcome: DeliveryOutcome): void => {
    this.waiters.get(row.id)?.resolve(outcome);
    this.waiters.delete(row.id);
    if (outcome.status !== "failed") return;
    const chat = sessionKeyOf(row.msg.channel, row.msg.chatId, row.msg.threadId, row.msg.account);
    const error = `an earlier message to this chat is waiting to be retried (${outcome.error})`;
    for (const [id, waiter] of this.waiters) {
      if (waiter.chat !== chat) continue;
      waiter.resolve({ status: "failed", error });
      this.waiters.delete(id);
    }
  };

  private async sendProgress(msg: OutboundMessage): Promise<DeliveryOutcome> {
    const entry = this.senders.get(routeOf(msg));
    if (!entry) return { status: "queued" };
    try {
      const receipt = await entry.handler(msg, {
        partsSent: 0,
        markPartSent: async () => {},
        signal: new AbortController().signal,
      });
      return { status: "sent", messageIds: receipt?.messageIds ?? [] };
    } catch (err) {
      return { status: "failed", error: errorText(err) };
    }
  }
}
