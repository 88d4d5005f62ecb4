import { prepareAttachments } from "../agent/attachments.js";
import { createChatModels } from "../agent/model-choice.js";
import { listSkills } from "../agent/skills.js";
import { HelperManager } from "../agent/spawned-helpers.js";
import { AgentWorker } from "../agent/worker.js";
import { routeOf } from "../bus/types.js";
import type { Config } from "../config/config.js";
import { createHelperModel } from "../llm/configured.js";
import { contextLine } from "../llm/context-limits.js";
import { skillDirs } from "../paths.js";
import { Heartbeat, readHeartbeatFile } from "../scheduler/heartbeat.js";
import { recordingRunEnds } from "../scheduler/run-end.js";
import { ReadCache } from "../tools/files/read-cache.js";
import { createTools } from "../tools/index.js";
import { McpManager, mcpStatusLines } from "../tools/mcp/manager.js";
import { ToolRegistry } from "../tools/registry.js";
import { createMetrics } from "../web/metrics.js";
import { createAgentRuntimes } from "./agent-runtimes.js";
import type { Core } from "./core.js";
import type { Models } from "./models.js";
import type { AppOptions } from "./options.js";

export type Agent = ReturnType<typeof buildAgent>;

/** The tools, the helpers and the worker that runs turns with them; the heartbeat; the metrics of it all. */
export function buildAgent(config: Config, options: AppOptions, core: Core, models: Models) {
  const { log, store, bus, clustering, cluster, access, approvals, scheduler, tokens } = core;
  const { model, chain, window } = models;
  const registry = new ToolRegistry(config.agent.toolTimeoutSeconds, config.agent.maxToolResultChars);
  const helpers = new HelperManager({
    bus,
    store: store.helperRuns,
    model: createHelperModel(config, model, options.model !== undefined),
    registry,
    audit: store.audit,
    log: log.child({ part: "helpers" }),
    presence: clustering && {
      started: (id, onLost) => cluster.joined?.helperStarted(id, onLost),
      ended: (id) => cluster.joined?.helperEnded(id),
    },
    tokens,
    window,
    approve: approvals?.forHelpers,
    usage: models.usage,
    config,
  });
  for (const tool of createTools({ config, store, scheduler, helpers })) {
    if (!config.agent.disabledTools.includes(tool.name)) registry.register(tool);
  }
  const mcp = new McpManager({
    servers: config.mcp.servers,
    disabledTools: new Set(config.agent.disabledTools),
    registry,
    log,
    maxResultChars: config.exec.maxOutputChars,
    statusFile: options.mcpStatusFile,
    timing: options.mcpTiming,
  });
  const skills = skillDirs(config.workspace);
  // The prompt's files and skills are read every turn; unchanged ones come from memory.
  const files = new ReadCache(options.readCache);
  const metrics = config.webAddr
    ? createMetrics({
        outboxPending: () => store.dashboard.outboxPending(),
        knownTool: (name) => registry.get(name) !== undefined,
      })
    : undefined;
  const ownWrites = { journal: store.journal, steps: store.steps, turns: store.turns };
  // Clustered: every journal write of a turn is made under its conversation's turn lease.
  const writes =
    clustering && store.fenced
      ? clustering.fenceTurnWrites(ownWrites, (key) => cluster.joined?.fence(key), store.fenced.bind(store))
      : ownWrites;
  /** Set by start(): the first turns wait for it (bounded) so they see the MCP tools and the real context. */
  const startup = { ready: Promise.resolve() };
  const { usage } = models;
  const shared = { store, bus, scheduler, access, tokens, limits: models.limits, usage, files, log };
  const runtimes = createAgentRuntimes(config, { ...options, ...shared, approveHelpers: approvals?.forHelpers });
  const worker = new AgentWorker({
    agents: new Map([...runtimes].map(([name, runtime]) => [name, runtime.turn])),
    bus,
    journal: writes.journal,
    conversations: store.conversations,
    // A scheduled run's end goes into its job's history.
    turns: recordingRunEnds(writes.turns, {
      store,
      bus,
      pauseAfterFailures: config.cron.pauseAfterFailures,
      log: log.child({ part: "scheduler" }),
    }),
    senderHasAccess: (msg) => access.hasAccess(routeOf(msg), msg.senderId),
    steps: writes.steps,
    onTurnFinished: clustering && ((msg) => cluster.joined?.finished(msg)),
    audit: store.audit,
    registry,
    log,
    chatModels: createChatModels({ config, store: store.chatModels, access, chain }),
    helpers,
    memory: store.memory,
    tokens,
    consolidator: config.memory.consolidate ? models.consolidator : undefined,
    config,
    // A skill whose programs or variables are missing would only mislead the model.
    skills: () => listSkills(skills, log, process.env, files).filter((skill) => skill.missing.length === 0),
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
    statusLines: () => [contextLine(window(), config.agent.contextTokens), ...mcpStatusLines(mcp.status())],
    observer: metrics?.observer,
    usage: models.turnUsage,
    voice: models.voice,
    jobsChat: core.jobsChat,
  });
  metrics?.countQueue(() => worker.load.queued);
  const { intervalMinutes, target } = config.heartbeat;
  const heartbeat =
    intervalMinutes && target
      ? new Heartbeat({
          bus,
          inbox: store.journal,
          target,
          intervalMs: intervalMinutes * 60_000,
          log: log.child({ part: "heartbeat" }),
          readFile: () => readHeartbeatFile(config.workspace, log),
        })
      : undefined;
  return { registry, helpers, mcp, files, metrics, startup, worker, heartbeat, runtimes };
}
