import type { Logger } from "pino";
import type { ChannelName, InboundMessage, OutboundMessage } from "../bus/types.js";
import type { Store } from "../store/store.js";
import { hasAccess, isOwner, pairingNotice, strangerAction } from "./policy.js";

interface AccessGateDeps {
  /** The allowlists by channel (TELEGRAM_ALLOW_FROM, DISCORD_ALLOW_FROM). */
  allowFrom: Partial<Record<ChannelName, readonly string[]>>;
  pairing: Store["pairing"];
  /** Sends the pairing notice through the outbound bus. */
  send: (msg: OutboundMessage) => Promise<unknown>;
  log: Logger;
}

/** A stranger who keeps writing is sent their (same) code again at most this often. */
const REPEAT_AFTER_MS = 10 * 60 * 1000;

export type AccessGate = ReturnType<typeof createAccessGate>;

/** The one place that decides who may talk to pincer; channels only describe who is talking. */
export function createAccessGate(deps: AccessGateDeps) {
  const facts = (channel: ChannelName, userId: string) => ({
    channel,
    senderId: userId,
    allowFrom: deps.allowFrom[channel],
    isApproved: () => deps.pairing.isApproved(channel, userId),
  });
  const allowed = (channel: ChannelName, userId: string) => hasAccess(facts(channel, userId));

  return {
    /** Whether this person may talk to the agent now (a job runs only while its owner may). */
    hasAccess: allowed,
    /** Whether this person is the owner, who may change a chat's settings and see all usage (policy.ts's isOwner). */
    isOwner: (channel: ChannelName, userId: string) =>
      isOwner({ channel, senderId: userId, allowFrom: deps.allowFrom[channel] }),
    /** Every inbound message passes here: true lets it reach the agent; a stranger is answered with their code. */
    async admit(msg: InboundMessage): Promise<boolean> {
      if (await allowed(msg.channel, msg.senderId)) return true;
      const where = { channel: msg.channel, userId: msg.senderId, chatId: msg.chatId, isGroup: msg.isGroup };
      if (msg.isGroup) {
        // No request either: a group is no place to hand out codes, and a flood there must not evict real ones.
        deps.log.info(
          { ...where, name: msg.senderName },
          "message from a user who is not allowed (in a group: no code)",
        );
        return false;
      }
      const request = await deps.pairing.request(msg.channel, msg.senderId, msg.senderName);
      const action = strangerAction({ ...request, now: Date.now(), repeatAfterMs: REPEAT_AFTER_MS });
      deps.log.info({ ...where, name: msg.senderName, action }, "message from a user who is not allowed");
      if (action === "send-code") {
        await deps.pairing.markTold(msg.channel, msg.senderId);
        const text = pairingNotice(msg.channel, request.code);
        deps
          .send({ channel: msg.channel, chatId: msg.chatId, kind: "notice", text, replyToId: msg.id })
          .catch((err: unknown) => deps.log.warn({ err, ...where }, "could not send the pairing code"));
      }
      return false;
    },
  };
}
