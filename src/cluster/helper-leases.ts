import type { ClusterView } from "../store/cluster.js";

/** The lease a process holds while one of its background helpers (spawn) runs. */
export function helperLeaseName(runId: string): string {
  return `helper:${runId}`;
}

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
