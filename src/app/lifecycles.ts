import type { Channel } from "../bus/channel.js";
import { replyTarget, routeOf } from "../bus/types.js";
import type { Config } from "../config/config.js";
import { discoverContexts } from "../llm/configured.js";
import { mediaDir } from "../paths.js";
import { startHousekeeping } from "../store/housekeeping.js";
import { DEFAULT_TIMING } from "../tools/mcp/connection.js";
import type { Agent } from "./agent.js";
import type { Core } from "./core.js";
import type { Models } from "./models.js";
import type { AppOptions } from "./options.js";

type Parts = { config: Config; options: AppOptions; core: Core; models: Models; agent: Agent };

/** One process alone (SQLite, or PostgreSQL without a cluster): it runs the channels, the scheduler and every turn. */
export function embeddedLifecycle(parts: Parts) {
  const { core, agent } = parts;
  const roles = singletons(parts);
  const running: Channel[] = [];
  let workerDone: Promise<void> = Promise.resolve();
  let stopWatching: (() => Promise<void>) | undefined;
  return {
    /** Re-queues the unfinished messages of the bots running here, then starts the channels: a message from before a
     * restart runs first, so per-conversation order holds. Access is not asked here: a turn's first step asks it of
     * every message (one whose sender was revoked while pincer was down is closed, not run). */
    async start(channels: Channel[]) {
      beginStartup(parts);
      const served = new Set(channels.map((c) => c.name));
      const pending = (await core.store.journal.pendingInbound()).filter((m) => served.has(routeOf(replyTarget(m))));
      if (pending.length > 0) core.log.info({ count: pending.length }, "resuming messages from before the restart");
      for (const msg of pending) core.bus.requeueInbound(msg);
      // After the re-queue, or a notice published here would be queued twice.
      await agent.main.helpers.recoverInterrupted();
      await core.store.jobRuns.closeLeftOver();
      workerDone = agent.worker.run();
      // All at once, so no platform's outage holds up another's start; one that cannot start is one error line.
      await Promise.all(
        channels.map((channel) =>
          channel.start().then(
            () => running.push(channel),
            (err: unknown) =>
              core.log.error(`${channel.name} is off: ${err instanceof Error ? err.message : String(err)}`),
          ),
        ),
      );
      stopWatching = await watch(core);
      roles.start(channels);
    },
    stop: once(async () => {
      roles.stop();
      await stopWatching?.();
      await Promise.allSettled(running.map((c) => c.stop()));
      await close(parts, workerDone);
    }),
  };
}

/** One process of a cluster (PINCER_DATABASE_URL): the roles decide what runs here; the shared inbox, which
 * conversations. */
export function clusteredLifecycle(parts: Parts, clustering: NonNullable<Core["clustering"]>, databaseUrl: string) {
  const { config, core, agent } = parts;
  const { bus, cluster, log } = core;
  const roles = singletons(parts);
  let workerDone: Promise<void> = Promise.resolve();
  let stopWatching: (() => Promise<void>) | undefined;
  let outboxPoll: NodeJS.Timeout | undefined;
  return {
    async start(channels: Channel[]) {
      beginStartup(parts);
      workerDone = agent.worker.run();
      cluster.joined = await clustering.joinCluster(databaseUrl, {
        log,
        leaseMs: config.cluster.leaseSeconds * 1000,
        channels,
        singletons: { start: () => roles.start(channels), stop: roles.stop },
        worker: { room: () => config.agent.maxConcurrentTurns, drop: (key) => agent.worker.lanes.drop(key) },
        run: (msg) => bus.inbound.push(msg),
        // And job runs whose turn ended in a process that died before their end was recorded.
        recoverHelpers: async (orphaned) => {
          await agent.main.helpers.recoverInterrupted(orphaned, "the pincer process running it stopped");
          await core.store.jobRuns.closeLeftOver();
        },
      });
      stopWatching = await watch(core);
      // And every second, in case a notification was missed while the connection was down.
      outboxPoll = setInterval(() => {
        for (const channel of channels) bus.outboundRecorded(channel.name);
      }, 1000);
    },
    stop: once(async () => {
      // The channels and singletons stop with their roles, given back at once.
      clearInterval(outboxPoll);
      await cluster.joined?.stopRoles();
      roles.stop();
      await stopWatching?.();
      await close(parts, workerDone, () => cluster.joined?.leave());
    }),
  };
}

/** `stop` run once: a second call gets the first one's promise. */
function once(stop: () => Promise<void>): () => Promise<void> {
  let stopping: Promise<void> | undefined;
  return () => (stopping ??= stop());
}

/** In the background: a slow or broken server never delays the channels, only the first turns (bounded). */
function beginStartup({ config, options, models, agent }: Parts): void {
  const mcps = agent.agents.map((runtime) => runtime.mcp);
  for (const mcp of mcps) mcp.start();
  const mcpWaitMs = options.mcpWaitMs ?? { ...DEFAULT_TIMING, ...options.mcpTiming }.connectTimeoutMs;
  const attempts = mcps.map((mcp) => mcp.firstAttempts(mcpWaitMs));
  agent.startup.ready = Promise.all([...attempts, discoverContexts(config, models.limits)]).then(() => undefined);
}

/** What one process of a cluster runs for all (a single process runs them itself). */
function singletons({ config, core, agent }: Parts) {
  let stopHousekeeping: (() => void) | undefined;
  return {
    start: (channels: Channel[]) => {
      core.scheduler.start(channels.map((c) => c.name));
      for (const { heartbeat } of agent.agents) heartbeat?.start();
      stopHousekeeping = startHousekeeping({ ...core, mediaDir: mediaDir(config.home), retention: config.retention });
    },
    stop: () => {
      stopHousekeeping?.();
      core.scheduler.stop();
      for (const { heartbeat } of agent.agents) heartbeat?.stop();
    },
  };
}

/** Another process's reply wakes this one's sender at once (PostgreSQL; a single process wakes itself); clustered, a
 * new message wakes the dispatcher. */
function watch({ store, bus, cluster }: Core) {
  return store.watch?.((change) => {
    if (change.kind === "outbox") bus.wakeSenders();
    else cluster.joined?.wake();
  });
}

/** After the channels: the helpers and turns end, the process leaves its cluster, then everything closes. */
async function close({ core, agent }: Parts, workerDone: Promise<void>, leave?: () => Promise<void> | undefined) {
  for (const runtime of agent.agents) await runtime.helpers.stop();
  await agent.worker.lanes.stop();
  await leave?.();
  for (const { mcp, consolidator } of agent.agents) await Promise.all([mcp.close(), consolidator.stop()]);
  core.bus.close();
  await workerDone;
  await core.store.close();
}
