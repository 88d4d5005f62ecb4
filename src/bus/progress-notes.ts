import { inOrderPerKey } from "./in-order.js";
import type { DeliveryReceipt, OutboundMessage } from "./types.js";

/** How a channel posts, edits and deletes the one progress note of a chat. */
export interface NoteOps {
  send(msg: OutboundMessage): Promise<string>;
  edit(msg: OutboundMessage, messageId: string): Promise<void>;
  remove(msg: OutboundMessage, messageId: string): Promise<void>;
  /** The platform said the edit changes nothing (Telegram's "message is not modified"): not a failure. */
  isUnchanged?(err: unknown): boolean;
}

/** One note per chat and thread, edited in place as work goes on and deleted by a progress message with empty text (the
 * turn is over). A chat's notes are handled strictly in order, so a late edit never lands after the delete. */
export class ProgressNotes {
  private readonly ids = new Map<string, string>();
  private readonly inOrder = inOrderPerKey();

  constructor(private readonly ops: NoteOps) {}

  show(msg: OutboundMessage): Promise<DeliveryReceipt> {
    const key = `${msg.chatId}:${msg.threadId ?? ""}`;
    return this.inOrder(key, () => this.apply(key, msg));
  }

  private async apply(key: string, msg: OutboundMessage): Promise<DeliveryReceipt> {
    const existing = this.ids.get(key);
    if (!msg.text.trim()) {
      if (existing === undefined) return { messageIds: [] };
      this.ids.delete(key);
      await this.ops.remove(msg, existing);
      return { messageIds: [existing] };
    }
    if (existing !== undefined) {
      try {
        await this.ops.edit(msg, existing);
        return { messageIds: [existing] };
      } catch (err) {
        if (this.ops.isUnchanged?.(err)) return { messageIds: [existing] };
        // The note is gone (deleted by someone) or cannot be edited: post a fresh one.
        this.ids.delete(key);
      }
    }
    const id = await this.ops.send(msg);
    this.ids.set(key, id);
    return { messageIds: [id] };
  }
}
