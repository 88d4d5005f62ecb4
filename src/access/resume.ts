import type { Logger } from "pino";
import type { Switchboard } from "../bus/switchboard.js";
import { replyTarget, routeOf } from "../bus/types.js";
import type { Store } from "../store/store.js";

/** Messages accepted before a restart and never finished, addressed to `served`, queued again. Called before any
 * channel takes new messages, so per-conversation order holds across a restart. Access is not asked here: a turn's
 * first step asks it of every message (one whose sender was revoked while pincer was down is closed, not run). */
export async function resumePending(
  deps: { journal: Store["journal"]; bus: Switchboard; log: Logger },
  /** Routes (routeOf) of the bots running here. */
  served: ReadonlySet<string>,
): Promise<void> {
  const pending = (await deps.journal.pendingInbound()).filter((msg) => served.has(routeOf(replyTarget(msg))));
  if (pending.length > 0) deps.log.info({ count: pending.length }, "resuming messages from before the restart");
  for (const msg of pending) deps.bus.requeueInbound(msg);
}
