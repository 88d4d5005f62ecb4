import { openClusterStore } from "../store/postgres/cluster-store.js";
import { clusterLines, clusterVerdict, expectedRoles } from "./status-text.js";

export interface ClusterReport {
  /** `pincer status`'s cluster section. */
  lines: string[];
  /** `pincer doctor`'s check: every role held by a live process. */
  ok: boolean;
  detail: string;
}

/** Reads the cluster from its database once, for `pincer status` and `pincer doctor` (never throws). */
export async function inspectCluster(url: string, channels: readonly string[]): Promise<ClusterReport> {
  const roles = expectedRoles(channels);
  let store: Awaited<ReturnType<typeof openClusterStore>> | undefined;
  try {
    store = await openClusterStore(url, { queryTimeoutMs: 5000 });
    const view = await store.view();
    return { lines: clusterLines(view, roles), ...clusterVerdict(view, roles) };
  } catch (err) {
    const detail = `cannot read the cluster from PINCER_DATABASE_URL: ${err instanceof Error ? err.message : String(err)}`;
    return { lines: [`cluster:       ${detail}`], ok: false, detail };
  } finally {
    await store?.close().catch(() => {});
  }
}
