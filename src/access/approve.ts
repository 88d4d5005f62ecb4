import type { JobStore } from "../scheduler/job-store.js";
import type { Database } from "../store/database.js";
import type { PairingRequest, PairingStore } from "../store/pairing.js";

/** The channels whose strangers are given pairing codes. */
export type PairedChannel = "telegram" | "discord";

export function isPairedChannel(channel: string): channel is PairedChannel {
  return channel === "telegram" || channel === "discord";
}

/**
 * Approves the user behind a valid pairing code and resumes the jobs an earlier revoke paused,
 * in one transaction (`pincer pairing approve` and the control page's Approve). Undefined when
 * the code is unknown or expired.
 */
export function approvePairing(
  stores: { db: Database; pairing: PairingStore; jobs: JobStore },
  channel: PairedChannel,
  code: string,
): { user: PairingRequest; resumedJobs: number } | undefined {
  return stores.db.transaction(() => {
    const user = stores.pairing.approve(channel, code);
    if (!user) return undefined;
    return { user, resumedJobs: stores.jobs.resumeOwnedBy({ channel, userId: user.userId }) };
  })();
}
