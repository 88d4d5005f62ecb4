import { randomBytes } from "node:crypto";
import { renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import type { Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "pino";
import type { McpServerFileSettings } from "../../config/file-schema.js";
import { sanitizeName } from "../../config/mcp-settings.js";
import { writeInScope } from "../files/safe-io.js";
import type { ToolRegistry } from "../registry.js";
import type { Tool, ToolParameters } from "../tool.js";
import { DEFAULT_TIMING, McpConnection, type Timing } from "./connection.js";
import { formatResult } from "./format-result.js";
import { pickTools } from "./names.js";

/** A description longer than this is cut: every model request carries every tool's description. */
const MAX_DESCRIPTION_CHARS = 1000;
/** A tool whose argument schema is bigger than this is left out, for the same reason. */
const MAX_SCHEMA_CHARS = 16_000;

export type McpServerStatus = ReturnType<McpManager["status"]>[number];

export interface McpManagerDeps {
  servers: Record<string, McpServerFileSettings>;
  /** agent.disabledTools, as `mcp_<server>_<tool>`. */
  disabledTools?: ReadonlySet<string>;
  registry: ToolRegistry;
  log: Logger;
  /** Like exec's output. */
  maxResultChars: number;
  /** The last known state, for `pincer status` (a separate process). */
  statusFile?: string;
  timing?: Partial<Timing>;
}

/** Every configured MCP server, its tools kept registered as `mcp_<server>_<tool>` as its list changes. */
export class McpManager {
  private readonly servers: McpConnection[];
  private readonly killAll = () => {
    for (const server of this.servers) server.killNow();
  };

  constructor(private readonly deps: McpManagerDeps) {
    const timing = { ...DEFAULT_TIMING, ...deps.timing };
    const log = deps.log.child({ part: "mcp" });
    this.servers = Object.entries(deps.servers).map(([name, settings]) => {
      const events = { onTools: (tools: McpTool[]) => this.sync(server, tools), onState: () => this.writeStatus() };
      const server: McpConnection = new McpConnection(name, settings, events, log, timing);
      return server;
    });
  }

  /** Returns at once: a slow server never delays the channels. */
  start(): void {
    if (this.servers.length === 0) return;
    process.on("exit", this.killAll);
    for (const server of this.servers) void server.connect();
  }

  /** Settles once every server has connected or failed once, or after `maxMs`. */
  async firstAttempts(maxMs = Number.POSITIVE_INFINITY): Promise<void> {
    const late = Number.isFinite(maxMs) ? [delay(maxMs, undefined, { ref: false })] : [];
    await Promise.race([Promise.all(this.servers.map((s) => s.firstAttemptDone)), ...late]);
  }

  async close(): Promise<void> {
    await Promise.all(this.servers.map((s) => s.close()));
    process.off("exit", this.killAll);
  }

  /** `tools`: those offered (after enabledTools, collisions and the cap); `warnings` say why others are not. */
  status() {
    return this.servers.map(({ name, settings, state, registered, error, warnings, pid }) => ({
      name,
      transport: settings.command ? "stdio" : "http",
      state,
      tools: registered.length,
      trusted: settings.trusted,
      error,
      warnings,
      pid,
    }));
  }

  private sync(server: McpConnection, tools: McpTool[]): void {
    const { registry, log } = this.deps;
    for (const name of server.registered) registry.unregister(name);
    server.registered = [];
    const { picked, warnings } = pickTools(server.name, tools, { enabledTools: server.settings.enabledTools });
    for (const { name, tool } of picked) {
      if (this.deps.disabledTools?.has(name)) continue;
      const problem = registry.get(name)
        ? `tool "${tool.name}" becomes ${name}, which another tool already has`
        : this.register(server, name, tool);
      if (problem) warnings.push(problem);
      else server.registered.push(name);
    }
    server.warnings = warnings;
    for (const warning of warnings) log.warn({ server: server.name }, `MCP server ${server.name}: ${warning}`);
    log.info({ server: server.name, tools: server.registered.length }, "MCP tools registered");
    this.writeStatus();
  }

  /** Answers why not when its schema is unusable. */
  private register(connection: McpConnection, name: string, tool: McpTool): string | undefined {
    const { settings } = connection;
    const parameters = toParameters(tool.inputSchema);
    if (JSON.stringify(parameters).length > MAX_SCHEMA_CHARS) {
      return `tool "${tool.name}" has an argument schema over ${MAX_SCHEMA_CHARS} characters; left out`;
    }
    const description = (tool.description || tool.title || tool.name).slice(0, MAX_DESCRIPTION_CHARS);
    const offered: Tool = {
      name,
      description: `${description} (MCP server ${connection.name})`,
      parameters,
      readOnly: tool.annotations?.readOnlyHint === true,
      untrusted: !settings.trusted,
      timeoutSeconds: settings.toolTimeoutSeconds,
      execute: async (args, ctx) => {
        const result = await connection.call(tool.name, args, ctx.signal, settings.toolTimeoutSeconds * 1000);
        const save = (bytes: Buffer, extension: string) =>
          saveToWorkspace(ctx.workspace, connection.name, bytes, extension);
        return formatResult(result, save, this.deps.maxResultChars);
      },
    };
    try {
      this.deps.registry.register(offered, { compileNow: true });
    } catch (err) {
      return `tool "${tool.name}" has an argument schema pincer cannot use (${(err as Error).message}); left out`;
    }
  }

  private writeStatus(): void {
    const { statusFile } = this.deps;
    if (!statusFile) return;
    try {
      const temp = `${statusFile}.${process.pid}.tmp`;
      writeFileSync(temp, JSON.stringify({ updatedAt: new Date().toISOString(), servers: this.status() }, null, 2));
      renameSync(temp, statusFile);
    } catch (err) {
      this.deps.log.debug({ err }, "could not write the MCP status file");
    }
  }
}

/** One line per server, as `/status`, `pincer status` and `pincer doctor` show it. */
export function describeServer(s: McpServerStatus): string {
  const how = `${s.transport}${s.trusted ? ", trusted" : ""}`;
  if (s.state === "connected") {
    const warned = s.warnings.length > 0 ? `; ${s.warnings.join("; ")}` : "";
    return `${s.name} (${how}): connected, ${s.tools} tool${s.tools === 1 ? "" : "s"}${warned}`;
  }
  const tools = s.tools > 0 ? `, its ${s.tools} tools answer with an error meanwhile` : "";
  return `${s.name} (${how}): ${s.state}${s.error ? ` (${s.error})` : ""}${tools}`;
}

export function mcpStatusLines(servers: McpServerStatus[]): string[] {
  if (servers.length === 0) return [];
  return ["MCP servers:", ...servers.map((s) => `  ${describeServer(s)}`)];
}

/** An object at the root, no `$schema` dialect line. */
function toParameters(schema: McpTool["inputSchema"]): ToolParameters {
  const { $schema: _dialect, ...rest } = schema as Record<string, unknown>;
  return { ...rest, type: "object", properties: (rest.properties as Record<string, unknown>) ?? {} };
}

/** Files a server returns go to `mcp-files/<server>/` in the workspace, never over an existing file. */
async function saveToWorkspace(workspace: string, server: string, bytes: Buffer, extension: string): Promise<string> {
  const stamp = new Date().toISOString().replace(/[-:]/g, "").replace(/\..*$/, "");
  const relative = join("mcp-files", sanitizeName(server), `${stamp}-${randomBytes(4).toString("hex")}.${extension}`);
  // The race-free way the file tools write: no symlink in the workspace can lead the file out of it.
  await writeInScope(relative, { workspace }, bytes, true);
  return relative;
}
