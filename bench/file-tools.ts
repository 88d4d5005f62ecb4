/**
 * What race-free file access costs: read_file, write_file and grep through the registry (a
 * descriptor walk per call, grep's matching in a worker thread) against plain fs calls on the same
 * path, for a small file four folders deep; and the event loop's worst delay while a grep with a
 * pattern slow even for RE2 runs, which shows other chats stay answered.
 *
 *   npx tsx bench/file-tools.ts
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { createFileTools } from "../src/tools/files/index.js";
import { ToolRegistry } from "../src/tools/registry.js";
import { toolContext } from "../test/helpers/tools.js";
import { ms, summary } from "./stats.js";

const RUNS = 300;

const root = realpathSync(mkdtempSync(join(tmpdir(), "pincer-bench-files-")));
const home = join(root, "home");
const workspace = join(home, "workspace");
const deep = join(workspace, "a", "b", "c", "d");
mkdirSync(deep, { recursive: true });
writeFileSync(join(deep, "note.md"), "line one\nline two\nneedle here\n".repeat(50));
writeFileSync(join(workspace, "slow.txt"), `${"a".repeat(10_000)}\n`.repeat(20));

const registry = new ToolRegistry(60);
for (const tool of createFileTools({ home, agent: { toolTimeoutSeconds: 2 } })) registry.register(tool);
const ctx = toolContext("bench", workspace);

async function time(fn: () => Promise<unknown>): Promise<string> {
  for (let i = 0; i < 20; i++) await fn();
  const samples: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const start = performance.now();
    await fn();
    samples.push(performance.now() - start);
  }
  const s = summary(samples);
  return `median ${ms(s.median)}, p90 ${ms(s.p90)}`;
}

const rel = "a/b/c/d/note.md";
console.log(`read_file  ${await time(() => registry.execute("read_file", JSON.stringify({ path: rel }), ctx))}`);
console.log(`readFile   ${await time(() => readFile(join(deep, "note.md")))}`);
const content = JSON.stringify({ path: rel, content: "x".repeat(1000) });
console.log(`write_file ${await time(() => registry.execute("write_file", content, ctx))}`);
console.log(`writeFile  ${await time(() => writeFile(join(deep, "note.md"), "x".repeat(1000)))}`);
console.log(
  `grep       ${await time(() => registry.execute("grep", JSON.stringify({ pattern: "needle", path: "a" }), ctx))}`,
);

const delay = monitorEventLoopDelay({ resolution: 5 });
delay.enable();
const started = performance.now();
const result = await registry.execute(
  "grep",
  JSON.stringify({ pattern: "(?:a?){1000}a{1000}", path: "slow.txt" }),
  ctx,
);
delay.disable();
console.log(
  `slow grep: "${result}" after ${ms(performance.now() - started)}; event loop delay max ${ms(delay.max / 1e6)}`,
);
rmSync(root, { recursive: true, force: true });
