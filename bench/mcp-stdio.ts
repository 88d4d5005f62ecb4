/**
 * MCP over stdio: the cost of one tool call through the registry to server-everything's `echo`
 * (what pincer adds to a server's own time), and what a server flooding stdout with 20 MB and no
 * newline does to pincer's event loop (the longest stall while the line is read and refused).
 *
 *   npx tsx bench/mcp-stdio.ts
 */
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { pino } from "pino";
import type { McpServerFileSettings } from "../src/config/file-schema.js";
import { packageRoot } from "../src/paths.js";
import { McpManager } from "../src/tools/mcp/manager.js";
import { ToolRegistry } from "../src/tools/registry.js";
import { toolContext } from "../test/helpers/tools.js";
import { ms, summary } from "./stats.js";

const CALLS = 300;
const log = pino({ level: "silent" });
const server = (script: string, ...args: string[]): McpServerFileSettings => ({
  command: process.execPath,
  args: [join(packageRoot(), script), ...args],
  env: {},
  headers: {},
  toolTimeoutSeconds: 30,
  trusted: false,
});

const registry = new ToolRegistry();
const manager = new McpManager({
  servers: {
    everything: server("node_modules/@modelcontextprotocol/server-everything/dist/index.js", "stdio"),
    flood: server("test/fakes/hostile-mcp-server.mjs"),
  },
  registry,
  log,
  maxResultChars: 10_000,
});
const ctx = toolContext("bench", "/tmp");

manager.start();
const deadline = Date.now() + 30_000;
while (manager.status().some((s) => s.state !== "connected")) {
  if (Date.now() > deadline) throw new Error(`servers did not connect: ${JSON.stringify(manager.status())}`);
  await new Promise((resolve) => setTimeout(resolve, 20));
}

const samples: number[] = [];
for (let i = 0; i < CALLS + 20; i++) {
  const started = performance.now();
  const result = await registry.execute("mcp_everything_echo", JSON.stringify({ message: `n${i}` }), ctx);
  if (result !== `Echo: n${i}`) throw new Error(`unexpected result ${result}`);
  if (i >= 20) samples.push(performance.now() - started);
}
const s = summary(samples);
console.log(`echo over stdio, ${CALLS} calls: median ${ms(s.median)}, p90 ${ms(s.p90)}, min ${ms(s.min)}`);

const delay = monitorEventLoopDelay({ resolution: 5 });
delay.enable();
const started = performance.now();
const flood = await registry.execute("mcp_flood_flood_stdout", "{}", ctx);
delay.disable();
console.log(
  `20 MB stdout flood refused in ${ms(performance.now() - started)}, longest event-loop stall ${ms(delay.max / 1e6)} (${flood.slice(0, 60)}…)`,
);
await manager.close();
