import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pino } from "pino";
import { attempt } from "../../attempt.js";
import type { Config } from "../../config/config.js";
import { ToolRegistry } from "../registry.js";
import { describeServer, McpManager, type McpServerStatus } from "./manager.js";

/** `pincer doctor`: connects to every configured server once, lists its tools, and closes it again. */
export async function checkMcpServers(config: Config, connectTimeoutMs = 20_000) {
  if (Object.keys(config.mcp.servers).length === 0) return [];
  const manager = new McpManager({
    servers: config.mcp.servers,
    registry: new ToolRegistry(),
    log: pino({ level: "silent" }),
    maxResultChars: config.exec.maxOutputChars,
    // One attempt each: a retry would only make the doctor wait longer.
    timing: { connectTimeoutMs, retryInitialMs: 24 * 3600_000 },
  });
  manager.start();
  try {
    await manager.firstAttempts();
    return manager.status().map((s) => ({
      name: s.name,
      ok: s.state === "connected",
      warned: s.warnings.length > 0,
      detail: describeServer(s),
    }));
  } finally {
    await manager.close();
  }
}

export function mcpStatusPath(config: Config): string {
  return join(config.home, "mcp-status.json");
}

/** `pincer status`: the servers as the running (or last) daemon saw them, from its status file. */
export function lastKnownMcpStatus(config: Config): string[] {
  const names = Object.keys(config.mcp.servers);
  if (names.length === 0) return [];
  // Absent or torn: show the configured names only; foreign JSON (no servers list) counts as no file.
  const saved: { updatedAt?: string; servers?: McpServerStatus[] } | undefined = attempt(() =>
    JSON.parse(readFileSync(mcpStatusPath(config), "utf8")),
  );
  const servers = Array.isArray(saved?.servers) ? saved.servers : undefined;
  return [
    `mcp servers:   ${names.length} configured${servers ? `, as pincer saw them at ${saved?.updatedAt}` : ""}`,
    ...names.map((name) => {
      const known = servers?.find((s) => s?.name === name);
      return `  ${known ? describeServer({ ...known, warnings: known.warnings ?? [] }) : `${name}: not started yet`}`;
    }),
  ];
}
