import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { Logger } from "pino";
import type { Channel } from "../bus/channel.js";
import type { InboundMessage } from "../bus/types.js";
import type { Fence, FencedOutError } from "../store/cluster.js";
import { type ClusterStore, openClusterStore } from "../store/postgres/cluster-store.js";
import { ClusterWork } from "../store/postgres/cluster-work.js";
import { guardHelper, helperLeaseName, orphanedHelpers } from "./helper-leases.js";
import { leaseTiming } from "./lease-policy.js";
import { ClusterMember } from "./member.js";
import { RoleKeeper } from "./roles.js";
import { clusterLines, expectedRoles, liveHolders } from "./status-text.js";
import { TurnDispatcher } from "./turn-dispatcher.js";

export { fenceTurnWrites } from "./fenced-writes.js";

interface ClusterModeDeps {
  log: Logger;
  leaseMs: number;
  /** Each runs (its connection and its outbox sender) only while this process holds its role. */
  channels: Channel[];
  /** Work done once per cluster: the cron tick, the heartbeat, housekeeping. */
  singletons: { start(): void; stop(): void };
  /** The worker: how many more conversations it takes, and dropping one whose lease was lost. */
  worker: { room(): number; drop(sessionKey: string): void };
  /** Marks interrupted (and tells their chats) the helper runs `orphaned` picks: their process died. */
  recoverHelpers(orphaned: (runIds: string[]) => Promise<ReadonlySet<string>>): Promise<void>;
  run(msg: InboundMessage): void;
}

export type ClusterMode = Awaited<ReturnType<typeof joinCluster>>;
export type RoleHolders = Awaited<ReturnType<ClusterMode["roleHolders"]>>;

/** Clustered mode for one process, on its own connections: it heartbeats, runs each channel and the singletons only
 * while it holds their role, and takes waiting conversations under their turn lease. */
export async function joinCluster(url: string, deps: ClusterModeDeps) {
  const { log } = deps;
  const onError = (err: Error) => log.warn({ err: err.message }, "the cluster's database connection failed");
  const store = await openClusterStore(url, { onError });
  const work = new ClusterWork(url, onError);
  const processId = `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
  const clusterLog = log.child({ part: "cluster" });
  const member = new ClusterMember({
    store,
    process: { id: processId, host: hostname(), pid: process.pid },
    timing: leaseTiming(deps.leaseMs),
    log: clusterLog,
  });
  const keeper = new RoleKeeper({ member, log: clusterLog });
  for (const channel of deps.channels) {
    keeper.add({ name: `channel:${channel.name}`, start: () => channel.start(), stop: () => channel.stop() });
  }
  const sweeper = helperSweeper(deps, store, log);
  keeper.add({
    name: "scheduler",
    start: async () => {
      deps.singletons.start();
      sweeper.start();
    },
    stop: async () => {
      sweeper.stop();
      deps.singletons.stop();
    },
  });
  const dispatcher = new TurnDispatcher({ work, member, run: deps.run, ...deps.worker, log: clusterLog });
  member.start();
  dispatcher.start();
  log.info({ processId }, "clustered mode: this process joined the cluster");
  return {
    /** The fence of a conversation held here (every write of its turns is made under it). */
    fence: (sessionKey: string): Fence | undefined => dispatcher.fence(sessionKey),
    finished: (msg: InboundMessage) => dispatcher.finished(msg),
    /** Another process announced work: look for it now. */
    wake: () => dispatcher.wake(),
    /** A message was accepted into the shared inbox: wake the cluster's dispatchers. */
    accepted: () => {
      dispatcher.wake();
      work.announce().catch((err: Error) => log.warn({ err: err.message }, "could not wake the cluster"));
    },
    /** A helper (spawn) started or ended here: its lease tells the others it lives. */
    helperStarted: (runId: string, onLost: (err: FencedOutError) => void) =>
      guardHelper(member, runId, onLost, deps.leaseMs),
    helperEnded: (runId: string) => void member.unwant(helperLeaseName(runId)),
    /** The cluster as `pincer status` shows it (for the control page). */
    lines: async () => {
      const here = `this process: ${processId}; roles here: ${keeper.running().join(", ") || "none"}`;
      return [here, ...clusterLines(await store.view(), expectedRoles(deps.channels.map((c) => c.name)))];
    },
    /** For `/healthz`: the roles running here, and each role's live holder in the cluster. */
    roleHolders: async () => ({ here: keeper.running(), holders: liveHolders(await store.view()) }),
    /** Gives every role back (their work stopped first); call before the worker stops. */
    stopRoles: () => keeper.stop(),
    /** Gives the conversations back and leaves the cluster; call after the worker stopped. */
    async leave(): Promise<void> {
      await dispatcher.stop();
      await member.stop();
      await store.close();
      await work.close();
    },
  };
}

/** Every half lease, the scheduler's holder looks for helper runs whose lease nobody holds (their process died, or
 * stopped with them running) and marks them interrupted, as a restart does. */
function helperSweeper(deps: ClusterModeDeps, store: ClusterStore, log: Logger) {
  let timer: NodeJS.Timeout | undefined;
  let suspects = new Set<string>();
  let sweeping = false;
  const orphaned = async (runIds: string[]) => {
    const sweep = orphanedHelpers(runIds, await store.view(), suspects);
    suspects = sweep.suspects;
    return sweep.orphaned;
  };
  const sweep = () => {
    if (sweeping) return;
    sweeping = true;
    deps
      .recoverHelpers(orphaned)
      .catch((err: Error) => log.warn({ err: err.message }, "could not look for helpers whose process died"))
      .finally(() => {
        sweeping = false;
      });
  };
  return {
    start: () => {
      suspects = new Set();
      timer = setInterval(sweep, deps.leaseMs / 2);
    },
    stop: () => clearInterval(timer),
  };
}
