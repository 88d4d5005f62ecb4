import { inOrderPerKey } from "./in-order.js";
import type { DeliveryReceipt, OutboundMessage } from "./types.js";

/** One note per chat and thread, edited in place as work goes on and deleted by a progress message with empty text (the
 * turn is over); A chat's notes are handled strictly in order, so a late edit never lands after the delete. */
export function progressNotes(ops: {
  send(msg: OutboundMessage): Promise<string>;
  edit(msg: OutboundMessage, messageId: string): Promise<void>;
  remove(msg: OutboundMessage, messageId: string): Promise<void>;
  /** The platform said the edit changes nothing (Telegram's "message is not modified"): not a failure. */
  isUnchanged?(err: unknown): boolean;
}): (msg: OutboundMessage) => Promise<DeliveryReceipt> {
  const ids = new Map<string, string>();
  const inOrder = inOrderPerKey();

  async function apply(key: string, msg: OutboundMessage): Promise<DeliveryReceipt> {
    const existing = ids.get(key);
    if (!msg.text.trim()) {
      if (existing === undefined) return { messageIds: [] };
      ids.delete(key);
      await ops.remove(msg, existing);
      return { messageIds: [existing] };
    }
    if (existing !== undefined) {
      try {
        await ops.edit(msg, existing);
        return { messageIds: [existing] };
      } catch (err) {
        if (ops.isUnchanged?.(err)) return { messageIds: [existing] };
        // The note is gone (deleted by someone) or cannot be edited: post a fresh one.
        ids.delete(key);
      }
    }
    const id = await ops.send(msg);
    ids.set(key, id);
    return { messageIds: [id] };
  }

  return (msg) => {
    const key = `${msg.chatId}:${msg.threadId ?? ""}`;
    return inOrder(key, () => apply(key, msg));
  };
}
