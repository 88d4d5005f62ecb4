import type { McpServerStatus } from "./manager.js";

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
