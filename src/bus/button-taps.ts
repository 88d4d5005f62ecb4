import type { MessageBus } from "./bus.js";
import { EXPIRED_BUTTON } from "./buttons.js";
import { type InboundMessage, sessionKeyOf, type TapHandler } from "./types.js";

/** The data prefix of the message tool's buttons (`b:<row>.<column>`); the label is read from the platform. */
export const MESSAGE_BUTTON_PREFIX = "b:";

/**
 * A tap on a message-tool button becomes what the tapper says to that chat's conversation,
 * `[button] Label`, through the access gate and the inbox's replay check like anything they
 * type: a stranger's tap is refused as their message would be, a replayed tap is taken once.
 */
export function messageButtonTaps(bus: Pick<MessageBus, "publishInbound">): TapHandler {
  return async (tap) => {
    // The label is what the model offered; a message too old to show its keyboard has none.
    if (!tap.label) return { text: EXPIRED_BUTTON };
    const msg: InboundMessage = {
      id: `tap:${tap.id}`,
      channel: tap.channel,
      chatId: tap.chatId,
      senderId: tap.senderId,
      senderName: tap.senderName,
      text: `[button] ${tap.label}`,
      media: [],
      isGroup: tap.isGroup,
      mentionsBot: true,
      receivedAt: tap.receivedAt,
      sessionKey: sessionKeyOf(tap.channel, tap.chatId, tap.threadId),
    };
    await bus.publishInbound(msg);
    return {};
  };
}
