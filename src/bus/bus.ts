import { AsyncQueue } from "./async-queue.js";
import type {
  ActivityEvent,
  ChannelName,
  DeliveryOutcome,
  DeliveryReceipt,
  InboundMessage,
  OutboundMessage,
} from "./types.js";

/**
 * Durable bookkeeping behind the bus (implemented by the store). The bus stays in-memory and
 * ignorant of SQLite; the journal is what makes a crash lose no accepted message and resend
 * no delivered reply.
 */
export interface BusJournal {
  /** Records an inbound message; false when its id was seen before (a platform replay). */
  acceptInbound(msg: InboundMessage): boolean;
  /** Records an outbound message as pending and returns its outbox id. */
  recordOutbound(msg: OutboundMessage): number;
  markOutboundSent(id: number): void;
  /** Outbound messages recorded but never delivered (the process died first). */
  pendingOutbound(channel: ChannelName): Array<{ id: number; msg: OutboundMessage }>;
}

/** Sends one message; may report the platform's message ids (or its refusal) in a receipt. */
// biome-ignore lint/suspicious/noConfusingVoidType: a handler with nothing to report returns Promise<void>.
export type OutboundHandler = (msg: OutboundMessage) => Promise<DeliveryReceipt | undefined | void>;
export type ActivityHandler = (event: ActivityEvent) => void;

export interface BusOptions {
  journal?: BusJournal;
  onDeliveryError?: (err: unknown, msg: OutboundMessage) => void;
}

/** The in-process bus: channels publish inbound messages and render the outbound ones for their channel. */
export class MessageBus {
  readonly inbound = new AsyncQueue<InboundMessage>();
  private readonly outboundHandlers = new Map<ChannelName, OutboundHandler>();
  private readonly activityHandlers = new Map<ChannelName, Set<ActivityHandler>>();

  constructor(private readonly options: BusOptions = {}) {}

  /** Accepts a message for the agent; returns false for a replay that was already accepted. */
  publishInbound(msg: InboundMessage): boolean {
    if (this.options.journal && !this.options.journal.acceptInbound(msg)) return false;
    this.inbound.push(msg);
    return true;
  }

  /** Re-queues a message accepted earlier (recovery after a restart) without journaling it again. */
  requeueInbound(msg: InboundMessage): void {
    this.inbound.push(msg);
  }

  /**
   * Hands a message to its channel and resolves with what became of it once the channel is done.
   * Without a subscriber the message stays pending in the journal and goes out when the channel
   * starts. Progress notes are not journaled: after a restart they would describe nothing.
   */
  async publishOutbound(msg: OutboundMessage): Promise<DeliveryOutcome> {
    const id = msg.kind === "progress" ? undefined : this.options.journal?.recordOutbound(msg);
    return this.deliver(msg, id);
  }

  /** Whether a channel is running and sending now. */
  serves(channel: ChannelName): boolean {
    return this.outboundHandlers.has(channel);
  }

  /** Sends a message already recorded in the outbox (by a transaction that also did other work). */
  deliverRecorded(id: number, msg: OutboundMessage): Promise<DeliveryOutcome> {
    return this.deliver(msg, id);
  }

  /** One handler per channel; pending messages from before a restart are delivered first. */
  subscribeOutbound(channel: ChannelName, handler: OutboundHandler): Promise<void> {
    this.outboundHandlers.set(channel, handler);
    const pending = this.options.journal?.pendingOutbound(channel) ?? [];
    return pending.reduce<Promise<void>>(
      (chain, { id, msg }) => chain.then(async () => void (await this.deliver(msg, id))),
      Promise.resolve(),
    );
  }

  unsubscribeOutbound(channel: ChannelName): void {
    this.outboundHandlers.delete(channel);
  }

  publishActivity(event: ActivityEvent): void {
    for (const handler of this.activityHandlers.get(event.channel) ?? []) handler(event);
  }

  onActivity(channel: ChannelName, handler: ActivityHandler): () => void {
    const set = this.activityHandlers.get(channel) ?? new Set();
    set.add(handler);
    this.activityHandlers.set(channel, set);
    return () => set.delete(handler);
  }

  close(): void {
    this.inbound.close();
  }

  private async deliver(msg: OutboundMessage, id: number | undefined): Promise<DeliveryOutcome> {
    const handler = this.outboundHandlers.get(msg.channel);
    if (!handler) return { status: "queued" };
    try {
      const receipt = await handler(msg);
      // A refused message was dropped by the channel: it is done, like a sent one.
      if (id !== undefined) this.options.journal?.markOutboundSent(id);
      if (receipt?.refused) return { status: "refused", error: receipt.refused };
      return { status: "sent", messageIds: receipt?.messageIds ?? [] };
    } catch (err) {
      this.options.onDeliveryError?.(err, msg);
      return { status: "failed", error: err instanceof Error ? err.message : String(err) };
    }
  }
}
