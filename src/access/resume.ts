import type { Logger } from "pino";
import type { MessageBus } from "../bus/bus.js";
import { type ChannelName, replyTarget } from "../bus/types.js";
import type { Store } from "../store/store.js";
import type { AccessGate } from "./gate.js";

/** Messages accepted before a restart and never finished, addressed to `served`: re-queued when their sender still has
 * access, closed (not run) when access was revoked while pincer was down. Called before any channel takes new messages,
 * so per-conversation order holds across a restart. */
export async function resumePending(
  deps: { journal: Store["journal"]; bus: MessageBus; access: AccessGate; log: Logger },
  served: ReadonlySet<ChannelName>,
): Promise<void> {
  const { journal, bus, access, log } = deps;
  const pending = (await journal.pendingInbound()).filter((msg) => served.has(replyTarget(msg).channel));
  if (pending.length > 0) log.info({ count: pending.length }, "resuming messages from before the restart");
  for (const msg of pending) {
    if (await access.hasAccess(msg.channel, msg.senderId)) {
      bus.requeueInbound(msg);
      continue;
    }
    log.info({ channel: msg.channel, userId: msg.senderId }, "dropping a pending message: its sender lost access");
    await journal.completeInbound(msg);
  }
}
