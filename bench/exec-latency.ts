/**
 * What the sandbox costs: a plain spawn of `true` against the same spawn of `true` inside bwrap
 * (the argument list exec builds), plus a whole exec tool call (`sh -c true` with path checks,
 * guard and output formatting). Same process, same run, interleaved, 100 of each after a warm-up.
 *
 *   npx tsx bench/exec-latency.ts
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { MessageBus } from "../src/bus/bus.js";
import { loadConfig } from "../src/config/config.js";
import { buildBwrapArgs, sandboxEnv } from "../src/tools/exec/bwrap-args.js";
import { createExecTool } from "../src/tools/exec/exec-tool.js";
import { runProcess } from "../src/tools/exec/run-process.js";
import { checkSandbox, inspectHost } from "../src/tools/exec/sandbox-check.js";
import { ToolRegistry } from "../src/tools/registry.js";
import type { ToolContext } from "../src/tools/tool.js";
import { ms, summary } from "./stats.js";

const RUNS = 100;
const WARMUP = 5;

const home = realpathSync(mkdtempSync(join(tmpdir(), "pincer-bench-exec-")));
const workspace = join(home, "workspace");
mkdirSync(workspace, { recursive: true });
const config = loadConfig({ OPENAI_API_KEY: "bench", PINCER_HOME: home, PINCER_SANDBOX: "bwrap", LOG_LEVEL: "silent" });
const status = await checkSandbox(config);
if (!status.ok || !status.bwrap) {
  console.error(status.detail);
  process.exit(1);
}

const env = sandboxEnv(process.env, workspace, []);
const signal = new AbortController().signal;
const common = { cwd: workspace, env, timeoutSeconds: 30, signal, maxBufferBytes: 1 << 20 };
const bwrapArgs = buildBwrapArgs(
  inspectHost(),
  { workspace, workingDir: workspace, hidden: [home], network: false, env },
  ["true"],
);
const registry = new ToolRegistry().register(createExecTool({ config }));
const ctx: ToolContext = {
  sessionKey: "bench",
  inbound: {
    id: "b",
    channel: "console",
    chatId: "bench",
    senderId: "b",
    senderName: "b",
    text: "",
    media: [],
    isGroup: false,
    mentionsBot: true,
    receivedAt: 0,
    sessionKey: "bench",
  },
  workspace,
  signal,
  bus: new MessageBus(),
  log: pino({ level: "silent" }),
};

async function timed(run: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await run();
  return performance.now() - started;
}

const plain = () => runProcess({ ...common, file: "true", args: [] });
const sandboxed = () => runProcess({ ...common, file: status.bwrap as string, args: bwrapArgs });
const tool = async () => {
  const result = await registry.execute("exec", JSON.stringify({ command: "true" }), ctx);
  if (result !== "(no output)") throw new Error(`exec true answered ${result}`);
};

for (let i = 0; i < WARMUP; i++) {
  await plain();
  await sandboxed();
  await tool();
}
const samples = { plain: [] as number[], sandboxed: [] as number[], tool: [] as number[] };
for (let i = 0; i < RUNS; i++) {
  samples.plain.push(await timed(plain));
  samples.sandboxed.push(await timed(sandboxed));
  samples.tool.push(await timed(tool));
}
rmSync(home, { recursive: true, force: true });

const p = summary(samples.plain);
const s = summary(samples.sandboxed);
const t = summary(samples.tool);
console.log(`${status.detail}`);
console.log(`plain spawn of true        median ${ms(p.median)}  p90 ${ms(p.p90)}  (n=${RUNS})`);
console.log(`bwrap sandbox, true        median ${ms(s.median)}  p90 ${ms(s.p90)}  (n=${RUNS})`);
console.log(`exec tool call, sh -c true median ${ms(t.median)}  p90 ${ms(t.p90)}  (n=${RUNS})`);
console.log(
  `added by the sandbox: ${ms(s.median - p.median)} per call (ratio ${(s.median / p.median).toFixed(2)}x); ` +
    `whole tool call vs plain spawn: ${ms(t.median - p.median)} (ratio ${(t.median / p.median).toFixed(2)}x)`,
);
