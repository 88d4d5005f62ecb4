import { sanitizeName } from "../../config/mcp-settings.js";

/** OpenAI-compatible endpoints refuse requests with more than 128 tools; one server must not use them all. */
export const MAX_TOOLS_PER_SERVER = 64;

/** `mcp_<server>_<tool>`: characters outside `[A-Za-z0-9_-]` become `_`, cut to 64 (docs/tools.md, "MCP servers"). */
export function mcpToolName(server: string, tool: string): string {
  return `mcp_${sanitizeName(server)}_${sanitizeName(tool)}`.slice(0, 64);
}

/** Those in `enabledTools` (all when absent), first come first served when names collide, at most `max`. */
export function pickTools<T extends { name: string }>(
  server: string,
  tools: T[],
  options: { enabledTools?: string[]; max?: number },
): { picked: Array<{ name: string; tool: T }>; warnings: string[] } {
  const max = options.max ?? MAX_TOOLS_PER_SERVER;
  const enabled = options.enabledTools && new Set(options.enabledTools);
  const owners = new Map<string, string>();
  const picked: Array<{ name: string; tool: T }> = [];
  const warnings: string[] = [];
  for (const tool of tools) {
    const name = mcpToolName(server, tool.name);
    if (enabled && !enabled.has(tool.name) && !enabled.has(name)) continue;
    const owner = owners.get(name);
    if (owner !== undefined) {
      warnings.push(`tools "${owner}" and "${tool.name}" both become ${name}; only "${owner}" is offered`);
      continue;
    }
    owners.set(name, tool.name);
    if (picked.length < max) picked.push({ name, tool });
  }
  if (owners.size > max) {
    warnings.push(
      `it offers ${owners.size} tools; only the first ${max} are offered (list the ones you want in enabledTools)`,
    );
  }
  for (const wanted of options.enabledTools ?? []) {
    if (!tools.some((t) => t.name === wanted || mcpToolName(server, t.name) === wanted)) {
      warnings.push(`enabledTools lists "${wanted}", which the server does not offer`);
    }
  }
  return { picked, warnings };
}
