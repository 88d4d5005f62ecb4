import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { packageRoot } from "../../src/paths.js";
import { freePort } from "./net.js";
import { until } from "./until.js";

/** The reference server from the npm registry (a dev dependency), run with the node running the tests. */
export const EVERYTHING = join(packageRoot(), "node_modules/@modelcontextprotocol/server-everything/dist/index.js");
export const HOSTILE = join(packageRoot(), "test/fakes/hostile-mcp-server.mjs");
/** Reconnect quickly and give up on a silent server after 3 s, so tests take seconds. */
export const FAST_MCP = { connectTimeoutMs: 3000, retryInitialMs: 100, retryMaxMs: 400 };

/** Writes `{"mcp": {"servers": …}}` as the home's config.json, the way a user would. */
export function writeMcpConfig(home: string, servers: Record<string, unknown>): void {
  writeFileSync(join(home, "config.json"), JSON.stringify({ mcp: { servers } }, null, 2));
}

/** server-everything in its HTTP mode (`streamableHttp` or `sse`); it takes its port from PORT. */
export async function startEverythingHttp(
  mode: "streamableHttp" | "sse",
  port?: number,
): Promise<{ port: number; child: ChildProcess }> {
  port ??= await freePort();
  const child = spawn(process.execPath, [EVERYTHING, mode], {
    env: { PATH: process.env.PATH, PORT: String(port) },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let output = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  await until(() => /listening|running/i.test(output), `server-everything ${mode} to listen on ${port}`);
  return { port, child };
}

export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const closed = once(child, "close");
  child.kill("SIGKILL");
  await closed;
}

/** True while a process with this id exists and is not a zombie. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.split(") ")[1]?.[0] !== "Z";
  } catch {
    return false;
  }
}
