import { isAbsolute, resolve } from "node:path";
import { ConfigError } from "./errors.js";
import type { McpServerFileSettings } from "./file-schema.js";
import { isHttpUrl } from "./web.js";

/** Characters outside `[A-Za-z0-9_-]` become `_` in tool names (docs/tools.md, "MCP servers"). */
export function sanitizeName(text: string): string {
  return text.replace(/[^A-Za-z0-9_-]/g, "_");
}

/** `mcp.servers` checked beyond the schema (exactly one of `command` and `url`) and resolved: `${VAR}` in `env` and
 * `headers` from pincer's environment (secrets can stay in `.env`), a relative `cwd` from the config file's folder. */
export function resolveMcpSettings(
  env: Record<string, string | undefined>,
  servers: Record<string, McpServerFileSettings>,
  configDir: string,
): Record<string, McpServerFileSettings> {
  const out: Record<string, McpServerFileSettings> = {};
  const bySanitized = new Map<string, string>();
  for (const [name, server] of Object.entries(servers)) {
    const where = `mcp.servers.${name}`;
    if (Boolean(server.command) === Boolean(server.url)) {
      throw new ConfigError(
        `PINCER_CONFIG ${where} needs either "command" (a local server) or "url" (a remote one), not ${server.command ? "both" : "neither"}.`,
      );
    }
    if (server.url && !isHttpUrl(server.url)) {
      throw new ConfigError(`PINCER_CONFIG ${where}.url must be an http(s) URL, not "${server.url}".`);
    }
    const clash = bySanitized.get(sanitizeName(name));
    if (clash !== undefined) {
      throw new ConfigError(
        `PINCER_CONFIG mcp.servers "${clash}" and "${name}" give the same tool names (mcp_${sanitizeName(name)}_…); rename one.`,
      );
    }
    bySanitized.set(sanitizeName(name), name);
    out[name] = {
      ...server,
      env: substitute(env, server.env, `${where}.env`),
      headers: substitute(env, server.headers, `${where}.headers`),
      cwd: server.cwd && !isAbsolute(server.cwd) ? resolve(configDir, server.cwd) : server.cwd,
    };
  }
  return out;
}

function substitute(env: Record<string, string | undefined>, values: Record<string, string>, where: string) {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(values)) {
    out[key] = value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, variable: string) => {
      const found = env[variable];
      if (found) return found;
      throw new ConfigError(
        `PINCER_CONFIG ${where}.${key} uses \${${variable}}, which is not set in the environment or .env.`,
      );
    });
  }
  return out;
}
