import { prepareAttachments } from "../agent/attachments.js";
import { AgentWorker } from "../agent/worker.js";
import { routeOf } from "../bus/types.js";
import type { Config } from "../config/config.js";
import { recordingRunEnds } from "../scheduler/run-end.js";
import { ReadCache } from "../tools/files/read-cache.js";
import { createMetrics } from "../web/metrics.js";
import { createAgentRuntimes } from "./agent-runtimes.js";
import type { Core } from "./core.js";
import type { Models } from "./models.js";
import type { AppOptions } from "./options.js";

export type Agent = ReturnType<typeof buildAgent>;

/** Every agent (tools, models, helpers, memory) and the worker that runs their turns; the heartbeat; the metrics. */
export function buildAgent(config: Config, options: AppOptions, core: Core, models: Models) {
  const { log, store, bus, clustering, cluster, access, approvals, tokens } = core;
  // The prompt's files and skills are read every turn; unchanged ones come from memory.
  const files = new ReadCache(options.readCache);
  const { main, others, all } = createAgentRuntimes(config, { core, models, options, files });
  const metrics = config.webAddr
    ? createMetrics({
        outboxPending: () => store.dashboard.outboxPending(),
        knownTool: (name) => main.registry.get(name) !== undefined,
      })
    : undefined;
  const ownWrites = { journal: store.journal, steps: store.steps, turns: store.turns };
  const writes =
    clustering && store.fenced
      ? clustering.fenceTurnWrites(ownWrites, (key) => cluster.joined?.fence(key), store.fenced.bind(store))
      : ownWrites;
  /** Set by start(): the first turns wait for it (bounded) so they see the MCP tools and the real context. */
  const startup = { ready: Promise.resolve() };
  const worker = new AgentWorker({
    ...main.turn,
    agents: new Map([...others].map(([name, runtime]) => [name, runtime.turn])),
    bus,
    journal: writes.journal,
    conversations: store.conversations,
    turns: recordingRunEnds(writes.turns, {
      store,
      bus,
      pauseAfterFailures: config.cron.pauseAfterFailures,
      log: log.child({ part: "scheduler" }),
    }),
    senderHasAccess: (msg) => access.hasAccess(routeOf(msg), msg.senderId),
    access,
    people: store.people,
    steps: writes.steps,
    onTurnFinished: clustering && ((msg) => cluster.joined?.finished(msg)),
    audit: store.audit,
    log,
    memory: store.memory,
    tokens,
    files,
    waitForModel: options.waitForModel ?? true,
    // A transcription at the endpoint is counted with the chat's model calls (a local voice.stt costs nothing).
    attachments: (paths, signal, run) =>
      prepareAttachments(paths, {
        vision: config.agent.vision,
        transcribe: (path, s) => models.transcribe(path, s, (heard) => void models.usage.transcribed(run, heard)),
        signal,
      }),
    now: options.now,
    approve: approvals?.forTurns,
    ready: () => startup.ready,
    observer: metrics?.observer,
    usage: models.turnUsage,
    voice: models.voice,
    jobsChat: core.jobsChat,
  });
  metrics?.countQueue(() => worker.lanes.load.queued);
  return { main, agents: all, files, metrics, startup, worker };
}
