import { createChatModels } from "../agent/model-choice.js";
import { listSkills } from "../agent/skills.js";
import { HelperManager } from "../agent/spawned-helpers.js";
import { MAIN_AGENT } from "../bus/types.js";
import type { Config } from "../config/config.js";
import { createConfiguredModels, createHelperModel } from "../llm/configured.js";
import { contextLine } from "../llm/context-limits.js";
import { Consolidator } from "../memory/consolidator.js";
import { skillDirs } from "../paths.js";
import { agentHeartbeat } from "../scheduler/heartbeat.js";
import { ensureHome } from "../setup/ensure-home.js";
import type { ReadCache } from "../tools/files/read-cache.js";
import { createTools } from "../tools/index.js";
import { McpManager, mcpStatusLines } from "../tools/mcp/manager.js";
import { ToolRegistry } from "../tools/registry.js";
import type { Core } from "./core.js";
import type { Models } from "./models.js";
import type { AppOptions } from "./options.js";

/** What every agent shares: the core's parts, the models' meters, the options, the prompt files' cache. */
interface Shared {
  core: Core;
  models: Models;
  options: AppOptions;
  files: ReadCache;
}

/** Every agent (config `agents`, main first), each wired from its own settings alone; its MCP servers start once, with
 * pincer, not per message. */
export function createAgentRuntimes(config: Config, shared: Shared) {
  // Only main's MCP servers are written down for `pincer status`.
  const main = createAgentRuntime(config, shared, shared.options.mcpStatusFile);
  const names = Object.keys(config.agents).filter((name) => name !== MAIN_AGENT);
  const others = new Map(
    names.map((name) => [name, createAgentRuntime({ ...config, ...config.agents[name] }, shared)]),
  );
  return { main, others, all: [main, ...others.values()] };
}

function createAgentRuntime(config: Config, { core, models, options, files }: Shared, mcpStatusFile?: string) {
  const { store, bus, tokens, clustering, cluster } = core;
  const { limits, usage } = models;
  const log = core.log.child({ agent: config.agentName });
  ensureHome(config, log);
  const registry = new ToolRegistry(config.agent.toolTimeoutSeconds, config.agent.maxToolResultChars);
  const { model, chain } = createConfiguredModels(config, log.child({ part: "model" }), options.model, limits);
  const { window } = chain(undefined);
  const helpers = new HelperManager({
    bus,
    store: store.helperRuns,
    model: createHelperModel(config, model, options.model !== undefined),
    registry,
    audit: store.audit,
    log: log.child({ part: "helpers" }),
    // Clustered: each helper is known to the cluster while it runs, so another process does not take it for lost.
    presence: clustering && {
      started: (id, onLost) => cluster.joined?.helperStarted(id, onLost),
      ended: (id) => cluster.joined?.helperEnded(id),
    },
    tokens,
    window,
    approve: core.approvals?.forHelpers,
    usage,
    config,
  });
  for (const tool of createTools({ config, store, scheduler: core.scheduler, helpers })) {
    if (!config.agent.disabledTools.includes(tool.name)) registry.register(tool);
  }
  const mcp = new McpManager({
    servers: config.mcp.servers,
    disabledTools: new Set(config.agent.disabledTools),
    registry,
    log,
    maxResultChars: config.exec.maxOutputChars,
    statusFile: mcpStatusFile,
    timing: options.mcpTiming,
  });
  const consolidator = new Consolidator({
    store: store.memory,
    model,
    tokens,
    log: log.child({ part: "memory" }),
    timezone: config.timezone,
    contextTokens: window,
    now: options.now,
    usage,
  });
  const skills = skillDirs(config.workspace);
  const turn = {
    config,
    registry,
    helpers,
    chatModels: createChatModels({ config, store: store.chatModels, access: core.access, chain }),
    consolidator: config.memory.consolidate ? consolidator : undefined,
    // A skill whose programs or variables are missing would only mislead the model.
    skills: () => listSkills(skills, log, process.env, files).filter((skill) => skill.missing.length === 0),
    statusLines: () => [contextLine(window(), config.agent.contextTokens), ...mcpStatusLines(mcp.status())],
  };
  const heartbeat = agentHeartbeat(config, { bus, inbox: store.journal, log });
  return { turn, registry, mcp, helpers, consolidator, heartbeat };
}
