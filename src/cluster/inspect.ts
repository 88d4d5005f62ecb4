import { errorText, routeOf } from "../bus/types.js";
import type { Config } from "../config/config.js";
import { openClusterStore } from "../store/postgres/cluster-store.js";
import { ClusterWork } from "../store/postgres/cluster-work.js";
import { clusterLines, clusterVerdict, expectedRoles } from "./status-text.js";

/** The channels (each a cluster role) a gateway with this configuration runs: every bot (`telegram@shop` too), web. */
export function configuredChannels(config: Pick<Config, "accounts" | "webAddr">): string[] {
  return [...config.accounts.map(routeOf), ...(config.webAddr ? ["web"] : [])];
}

/** Reads the cluster from its database once (never throws): `lines` are `pincer status`'s cluster section; `ok` and
 * `detail` are `pincer doctor`'s check, every role held by a live process. */
export async function inspectCluster(url: string, channels: readonly string[]) {
  const roles = expectedRoles(channels);
  let store: Awaited<ReturnType<typeof openClusterStore>> | undefined;
  const work = new ClusterWork(url);
  try {
    store = await openClusterStore(url, { queryTimeoutMs: 5000 });
    const view = await store.view();
    // Before any gateway created the inbox there is nothing waiting (and no line to show).
    const waiting = await work.freeSessions(1000).catch(() => undefined);
    const lines = clusterLines(view, roles);
    const n = waiting?.length;
    const what = n ? `${n} conversation${n === 1 ? "" : "s"} with messages no process runs yet` : "none";
    if (waiting) lines.push(`  ${"turns waiting".padEnd(18)} ${what}`);
    return { lines, ...clusterVerdict(view, roles) };
  } catch (err) {
    const detail = `cannot read the cluster from PINCER_DATABASE_URL: ${errorText(err)}`;
    return { lines: [`cluster:       ${detail}`], ok: false, detail };
  } finally {
    await store?.close().catch(() => {});
    await work.close().catch(() => {});
  }
}
