import type { Logger } from "pino";
import type { AccessGate } from "../access/gate.js";
import { createChatModels } from "../agent/model-choice.js";
import { listSkills } from "../agent/skills.js";
import { HelperManager } from "../agent/spawned-helpers.js";
import type { WorkerDeps } from "../agent/worker-deps.js";
import type { Switchboard } from "../bus/switchboard.js";
import { MAIN_AGENT } from "../bus/types.js";
import type { Config } from "../config/config.js";
import { createConfiguredModels, createHelperModel } from "../llm/configured.js";
import { type ContextLimits, contextLine } from "../llm/context-limits.js";
import type { TokenCounter } from "../llm/tokens.js";
import { Consolidator } from "../memory/consolidator.js";
import { skillDirs } from "../paths.js";
import type { Scheduler } from "../scheduler/scheduler.js";
import { ensureHome } from "../setup/ensure-home.js";
import type { Store } from "../store/store.js";
import type { ReadCache } from "../tools/files/read-cache.js";
import { createTools } from "../tools/index.js";
import type { Timing } from "../tools/mcp/connection.js";
import { McpManager, mcpStatusLines } from "../tools/mcp/manager.js";
import { ToolRegistry } from "../tools/registry.js";
import type { UsageMeter } from "../usage/meter.js";

interface Shared {
  store: Store;
  bus: Switchboard;
  scheduler: Scheduler;
  access: AccessGate;
  tokens: TokenCounter;
  limits: ContextLimits;
  usage: UsageMeter;
  files: ReadCache;
  log: Logger;
  approveHelpers?: ConstructorParameters<typeof HelperManager>[0]["approve"];
  mcpTiming?: Partial<Timing>;
  now?: () => Date;
}

/** One agent other than main, wired from its own settings: the worker runs its conversations' turns with `turn`. */
export type AgentRuntime = ReturnType<typeof createAgentRuntime>;

/**
 * Each agent but main (config `agents`), wired as main is but from its own settings alone: its workspace (prompt files,
 * skills, MEMORY.md, the file tools' and exec's folder), its models with their own keys, its tools (`disabledTools`),
 * its MCP servers (started once, with pincer, not per message), its helpers and its memory's consolidation.
 */
export function createAgentRuntimes(config: Config, shared: Shared): Map<string, AgentRuntime> {
  const names = Object.keys(config.agents).filter((name) => name !== MAIN_AGENT);
  return new Map(names.map((name) => [name, createAgentRuntime({ ...config, ...config.agents[name] }, shared)]));
}

function createAgentRuntime(config: Config, shared: Shared) {
  const { store, bus, tokens, limits, usage, files } = shared;
  const log = shared.log.child({ agent: config.agentName });
  ensureHome(config, log);
  const registry = new ToolRegistry(config.agent.toolTimeoutSeconds, config.agent.maxToolResultChars);
  const { model, chain } = createConfiguredModels(config, log.child({ part: "model" }), undefined, limits);
  const { window } = chain(undefined);
  const helpers = new HelperManager({
    bus,
    store: store.helperRuns,
    model: createHelperModel(config, model, false),
    registry,
    audit: store.audit,
    log: log.child({ part: "helpers" }),
    tokens,
    window,
    approve: shared.approveHelpers,
    usage,
    config,
  });
  for (const tool of createTools({ config, store, scheduler: shared.scheduler, helpers })) {
    if (!config.agent.disabledTools.includes(tool.name)) registry.register(tool);
  }
  const mcp = new McpManager({
    servers: config.mcp.servers,
    disabledTools: new Set(config.agent.disabledTools),
    registry,
    log,
    maxResultChars: config.exec.maxOutputChars,
    timing: shared.mcpTiming,
  });
  const consolidator = new Consolidator({
    store: store.memory,
    model,
    tokens,
    log: log.child({ part: "memory" }),
    workspace: config.workspace,
    timezone: config.timezone,
    contextTokens: window,
    now: shared.now,
    usage,
  });
  const skills = skillDirs(config.workspace);
  const turn: Partial<WorkerDeps> = {
    config,
    registry,
    helpers,
    chatModels: createChatModels({ config, store: store.chatModels, access: shared.access, chain }),
    consolidator: config.memory.consolidate ? consolidator : undefined,
    skills: () => listSkills(skills, log, process.env, files).filter((skill) => skill.missing.length === 0),
    statusLines: () => [contextLine(window(), config.agent.contextTokens), ...mcpStatusLines(mcp.status())],
  };
  return { turn, mcp, helpers, consolidator };
}
