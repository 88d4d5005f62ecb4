import type { ClusterView } from "../store/cluster.js";
import { HELPER_PREFIX } from "./helper-leases.js";
import { turnLeaseName } from "./turn-dispatcher.js";

/** A process silent for longer than this is presumed dead (its leases have run out long before). */
export const SILENT_AFTER_MS = 30_000;

const TURN_PREFIX = turnLeaseName("");

/** A role's lease, as opposed to a conversation's turn or a helper's. */
const isRole = (name: string) => !name.startsWith(TURN_PREFIX) && !name.startsWith(HELPER_PREFIX);

const seconds = (ms: number) => (ms < 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 1000)} s`);

function processName(view: ClusterView, id: string): string {
  const p = view.processes.find((candidate) => candidate.id === id);
  return p ? `${p.host}:${p.pid}` : id;
}

/** `pincer status`'s cluster section: every process with its last heartbeat and what it holds, then each role the
 * configuration asks for and who holds it (`nobody` while it is free, as for a few seconds after its holder died). */
export function clusterLines(view: ClusterView, roles: readonly string[]): string[] {
  const lines = [`cluster:       ${view.processes.length} process${view.processes.length === 1 ? "" : "es"}`];
  for (const p of view.processes) {
    const held = view.leases.filter((l) => l.holder === p.id && l.expiresInMs > 0);
    const turns = held.filter((l) => l.name.startsWith(TURN_PREFIX)).length;
    const helpers = held.filter((l) => l.name.startsWith(HELPER_PREFIX)).length;
    const named = held.filter((l) => isRole(l.name)).map((l) => l.name);
    const silent = p.heartbeatAgeMs > SILENT_AFTER_MS ? " (silent: presumed dead)" : "";
    lines.push(
      `  ${p.host}:${p.pid} heartbeat ${seconds(p.heartbeatAgeMs)} ago${silent}; ` +
        `roles: ${named.join(", ") || "none"}; turns running: ${turns}${helpers ? `; helpers running: ${helpers}` : ""}`,
    );
  }
  for (const role of roles) {
    const lease = view.leases.find((l) => l.name === role && l.expiresInMs > 0);
    lines.push(
      `  ${role.padEnd(18)} ${lease ? `${processName(view, lease.holder)} (epoch ${lease.epoch}, renewed within ${seconds(lease.expiresInMs)})` : "nobody"}`,
    );
  }
  return lines;
}

/** The roles a configuration makes the cluster elect: each enabled channel and the scheduler. */
export function expectedRoles(channels: readonly string[]): string[] {
  return [...channels.map((channel) => `channel:${channel}`), "scheduler"];
}

/** Each role held by a live process (its lease current, its heartbeat recent), with that process's name. */
export function liveHolders(view: ClusterView): Map<string, string> {
  const alive = new Set(view.processes.filter((p) => p.heartbeatAgeMs <= SILENT_AFTER_MS).map((p) => p.id));
  return new Map(
    view.leases
      .filter((l) => isRole(l.name) && l.expiresInMs > 0 && alive.has(l.holder))
      .map((l) => [l.name, processName(view, l.holder)]),
  );
}

/** `pincer doctor`'s verdict on the cluster: every role held by a live process, or what is not. */
export function clusterVerdict(view: ClusterView, roles: readonly string[]): { ok: boolean; detail: string } {
  const alive = view.processes.filter((p) => p.heartbeatAgeMs <= SILENT_AFTER_MS).length;
  const held = liveHolders(view);
  const free = roles.filter((role) => !held.has(role));
  const processes = `${alive} live process${alive === 1 ? "" : "es"}`;
  if (free.length === 0) return { ok: true, detail: `${processes}; every role is held` };
  return {
    ok: false,
    detail: `${processes}; held by nobody: ${free.join(", ")} (start a pincer gateway with this PINCER_DATABASE_URL)`,
  };
}
