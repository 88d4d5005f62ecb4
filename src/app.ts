import { buildAgent } from "./app/agent.js";
import { buildCore } from "./app/core.js";
import { clusteredLifecycle, embeddedLifecycle } from "./app/lifecycles.js";
import { buildModels } from "./app/models.js";
import type { AppOptions } from "./app/options.js";
import type { RoleHolders } from "./cluster/cluster-mode.js";
import type { Config } from "./config/config.js";

export type { AppOptions } from "./app/options.js";

/** Everything one pincer process shares, wired once: the composition root of the daemon. */
export type App = Awaited<ReturnType<typeof createApp>>;

/** Builds the core (store, bus, gate, scheduler), the models, the agent (tools, helpers, worker), in that order, and
 * the lifecycle that starts and stops them: one process alone, or one of a cluster. */
export async function createApp(config: Config, options: AppOptions) {
  const core = await buildCore(config, options);
  const models = buildModels(config, options, core);
  const agent = buildAgent(config, options, core, models);
  const parts = { config, options, core, models, agent };
  const { clustering, cluster } = core;
  const { start, stop } =
    clustering && config.databaseUrl
      ? clusteredLifecycle(parts, clustering, config.databaseUrl)
      : embeddedLifecycle(parts);
  return {
    config,
    log: core.log,
    store: core.store,
    bus: core.bus,
    registry: agent.main.registry,
    worker: agent.worker,
    helpers: agent.main.helpers,
    scheduler: core.scheduler,
    /** Run now, pause, resume, edit and delete, for the page and the chat. */
    jobs: core.jobs,
    mcp: agent.main.mcp,
    /** Present when config `approvals` asks for any: the control page decides through it. */
    approvals: core.approvals,
    heartbeat: agent.main.heartbeat,
    /** Every agent, main first: its tools, helpers, MCP servers and heartbeat. */
    agents: agent.agents,
    /** Present when the control page is on (PINCER_WEB_ADDR), which serves /metrics. */
    metrics: agent.metrics,
    consolidator: agent.main.consolidator,
    files: agent.files,
    /** Clustered mode: the cluster's state as status lines. */
    clusterLines: clustering && (async () => (cluster.joined ? cluster.joined.lines() : ["cluster: joining"])),
    /** Clustered mode: which roles run here and who holds each (nothing runs here before start()). */
    clusterRoles:
      clustering &&
      (async (): Promise<RoleHolders> => cluster.joined?.roleHolders() ?? { here: [], holders: new Map() }),
    start,
    stop,
  };
}
