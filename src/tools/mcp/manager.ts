import { randomBytes } from "node:crypto";
import { renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "pino";
import type { McpServerFileSettings } from "../../config/file-schema.js";
import { sanitizeName } from "../../config/mcp-settings.js";
import { writeInScope } from "../files/safe-write.js";
import type { ToolRegistry } from "../registry.js";
import type { Tool, ToolParameters } from "../tool.js";
import { DEFAULT_TIMING, McpConnection, type ServerState, type Timing } from "./connection.js";
import { formatResult } from "./format-result.js";
import { pickTools } from "./names.js";

/** A description longer than this is cut: every model request carries every tool's description. */
const MAX_DESCRIPTION_CHARS = 1000;
/** A tool whose argument schema is bigger than this is left out, for the same reason. */
const MAX_SCHEMA_CHARS = 16_000;

export interface McpServerStatus {
  name: string;
  transport: "stdio" | "http";
  state: ServerState;
  /** Tools offered to the model (after enabledTools, collisions and the cap). */
  tools: number;
  trusted: boolean;
  error?: string;
  /** Why some of the server's tools are not offered. */
  warnings: string[];
  pid?: number;
}

export interface McpManagerDeps {
  servers: Record<string, McpServerFileSettings>;
  /** agent.disabledTools: offered names (`mcp_<server>_<tool>`) left out. */
  disabledTools?: ReadonlySet<string>;
  registry: ToolRegistry;
  log: Logger;
  /** Results are cut to this many characters, like exec's output. */
  maxResultChars: number;
  /** Where the last known state is written for `pincer status` (a separate process). */
  statusFile?: string;
  timing?: Partial<Timing>;
}

interface Server {
  connection: McpConnection;
  settings: McpServerFileSettings;
  registered: string[];
  warnings: string[];
}

/**
 * Every configured MCP server: connected in the background, their tools kept registered as
 * `mcp_<server>_<tool>` while pincer runs (added, replaced and removed as the servers' lists change).
 */
export class McpManager {
  private readonly servers = new Map<string, Server>();
  private readonly killAll = () => {
    for (const server of this.servers.values()) server.connection.killNow();
  };

  constructor(private readonly deps: McpManagerDeps) {
    const timing = { ...DEFAULT_TIMING, ...deps.timing };
    const log = deps.log.child({ part: "mcp" });
    for (const [name, settings] of Object.entries(deps.servers)) {
      const server: Server = { settings, registered: [], warnings: [], connection: undefined as never };
      server.connection = new McpConnection(
        name,
        settings,
        { onTools: (tools) => this.sync(server, tools), onState: () => this.writeStatus() },
        log,
        timing,
      );
      this.servers.set(name, server);
    }
  }

  /** Starts connecting every server; returns at once (a slow server never delays the channels). */
  start(): void {
    if (this.servers.size === 0) return;
    process.on("exit", this.killAll);
    for (const server of this.servers.values()) server.connection.start();
  }

  /** Settles once every server has connected or failed once, or after `maxMs`. */
  async firstAttempts(maxMs = Number.POSITIVE_INFINITY): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const all = Promise.all([...this.servers.values()].map((s) => s.connection.firstAttemptDone));
    const late = new Promise<void>((resolve) => {
      if (Number.isFinite(maxMs)) timer = setTimeout(resolve, maxMs);
    });
    await Promise.race([all, late]);
    clearTimeout(timer);
  }

  async close(): Promise<void> {
    await Promise.all([...this.servers.values()].map((s) => s.connection.close()));
    process.off("exit", this.killAll);
  }

  status(): McpServerStatus[] {
    return [...this.servers.values()].map(({ connection, settings, registered, warnings }) => ({
      name: connection.name,
      transport: settings.command ? "stdio" : "http",
      state: connection.state,
      tools: registered.length,
      trusted: settings.trusted,
      error: connection.error,
      warnings,
      pid: connection.pid,
    }));
  }

  /** Replaces the server's tools in the registry with its current list. */
  private sync(server: Server, tools: McpTool[]): void {
    const { registry, log } = this.deps;
    const { connection, settings } = server;
    for (const name of server.registered) registry.unregister(name);
    server.registered = [];
    const { picked, warnings } = pickTools(connection.name, tools, { enabledTools: settings.enabledTools });
    for (const { name, tool } of picked) {
      if (this.deps.disabledTools?.has(name)) continue;
      const problem = registry.get(name)
        ? `tool "${tool.name}" becomes ${name}, which another tool already has`
        : this.register(server, name, tool);
      if (problem) warnings.push(problem);
      else server.registered.push(name);
    }
    server.warnings = warnings;
    for (const warning of warnings) log.warn({ server: connection.name }, `MCP server ${connection.name}: ${warning}`);
    log.info({ server: connection.name, tools: server.registered.length }, "MCP tools registered");
    this.writeStatus();
  }

  /** Registers one tool; answers why not when its schema is unusable. */
  private register(server: Server, name: string, tool: McpTool): string | undefined {
    const { connection, settings } = server;
    const parameters = toParameters(tool.inputSchema);
    if (JSON.stringify(parameters).length > MAX_SCHEMA_CHARS) {
      return `tool "${tool.name}" has an argument schema over ${MAX_SCHEMA_CHARS} characters; left out`;
    }
    const timeoutMs = settings.toolTimeoutSeconds * 1000;
    const description = (tool.description || tool.title || tool.name).slice(0, MAX_DESCRIPTION_CHARS);
    const offered: Tool = {
      name,
      description: `${description} (MCP server ${connection.name})`,
      parameters,
      readOnly: tool.annotations?.readOnlyHint === true,
      untrusted: !settings.trusted,
      timeoutSeconds: settings.toolTimeoutSeconds,
      execute: async (args, ctx) => {
        const result = await connection.call(tool.name, args, ctx.signal, timeoutMs);
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
    return undefined;
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

/** The server's JSON Schema as a tool's parameters: an object at the root, no `$schema` dialect line. */
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
