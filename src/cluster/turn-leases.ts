import type { Fence } from "../store/cluster.js";
import type { ClusterMember } from "./member.js";

/** The lease that lets one process at a time run a conversation's turns. */
export function turnLeaseName(sessionKey: string): string {
  return `turn:${sessionKey}`;
}

/**
 * Per-conversation turn leases: a process runs a conversation's turns only while it holds the
 * conversation's lease, and every journal write of those turns is fenced with the lease's epoch
 * (Store.fenced), so a process that was paused past its lease cannot write after another
 * took over, even with a write already on its way.
 */
export class TurnLeases {
  constructor(private readonly member: ClusterMember) {}

  /**
   * Tries once for the conversation's lease: the fence when this process has it now, undefined
   * when another process runs the conversation (or the database did not answer). `lost` is called
   * if the lease is lost later, before give().
   */
  take(sessionKey: string, lost: (fence: Fence) => void): Promise<Fence | undefined> {
    const name = turnLeaseName(sessionKey);
    return new Promise((resolve) => {
      let answered = false;
      this.member.want(name, {
        gained: (fence) => {
          if (answered) return;
          answered = true;
          resolve(fence);
        },
        lost: (fence) => {
          if (answered) lost(fence);
        },
        denied: () => {
          if (answered) return;
          answered = true;
          void this.member.unwant(name).then(() => resolve(undefined));
        },
      });
    });
  }

  /** The fence while this process still holds the conversation's lease. */
  fence(sessionKey: string): Fence | undefined {
    return this.member.fence(turnLeaseName(sessionKey));
  }

  /** Gives the conversation back (its lane is empty): another process may run its next turn at once. */
  give(sessionKey: string): Promise<void> {
    return this.member.unwant(turnLeaseName(sessionKey));
  }
}
