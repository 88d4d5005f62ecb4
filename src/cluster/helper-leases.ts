import { type ClusterView, type Fence, FencedOutError } from "../store/cluster.js";
import type { ClusterMember } from "./member.js";

/** The lease a process holds while one of its background helpers (spawn) runs. */
export const helperLeaseName = (runId: string) => `helper:${runId}`;

export const HELPER_PREFIX = helperLeaseName("");

/** One sweep for helpers whose process died: the runs stored as running whose lease nobody holds. A run's row is
 * written a moment before its lease is first claimed, so a run counts as orphaned only when its lease was missing at
 * the previous sweep too; `suspects` is what to pass next time. */
export function orphanedHelpers(
  running: readonly string[],
  view: Pick<ClusterView, "leases">,
  suspects: ReadonlySet<string>,
): { orphaned: Set<string>; suspects: Set<string> } {
  const held = new Set(view.leases.filter((l) => l.expiresInMs > 0).map((l) => l.name));
  const unheld = new Set(running.filter((id) => !held.has(helperLeaseName(id))));
  return { orphaned: new Set([...unheld].filter((id) => suspects.has(id))), suspects: unheld };
}

/** Fences the helper with its lease, as turns are: once the lease is lost here (a pause past it, the database gone too
 * long), the helper may have been declared interrupted elsewhere and its chat told: `onLost` stops it at once, before
 * another step. A lease not gained within `firstWithinMs` counts as lost. */
export function guardHelper(
  member: Pick<ClusterMember, "want" | "fence">,
  runId: string,
  onLost: (err: FencedOutError) => void,
  firstWithinMs: number,
) {
  const name = helperLeaseName(runId);
  let settle = () => {};
  const first = new Promise<void>((resolve) => {
    settle = resolve;
  });
  setTimeout(settle, firstWithinMs).unref();
  let lost: FencedOutError | undefined;
  const lose = (fence: Fence) => {
    if (!lost) {
      lost = new FencedOutError(fence);
      onLost(lost);
    }
    settle();
    return lost;
  };
  member.want(name, { gained: () => settle(), lost: lose });
  return {
    /** What the helper asks before each step: resolves while this process holds the helper's lease; throws
     * FencedOutError once it lost it, for good. */
    async check() {
      await first;
      if (lost) throw lost;
      // Held by the local clock too: a process just woken from a pause acts on nothing before its next renewal says so.
      if (!member.fence(name)) throw lose({ name, epoch: 0 });
    },
  };
}
