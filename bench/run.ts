/**
 * `npm run bench`: every figure pincer promises, each against a baseline measured in the same run,
 * as one Markdown table, also written to `docs/benchmarks.md` (saying whether it was a quick run).
 * `--quick` runs smaller samples; every run leaves its JSON in `bench/results/` (git-ignored).
 *
 *   npm run bench            # full
 *   npm run bench -- --quick # smoke run
 *   npm run bench -- --quick --only turns,start   # just those steps; docs/benchmarks.md untouched
 *   npm run bench -- --only cluster   # embedded against one and two clustered processes (PostgreSQL)
 *   npm run bench -- --against ../old # turns and starts beside another built checkout's (bench/against.ts)
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import { join } from "node:path";
import { packageRoot } from "../src/paths.js";
import { againstBuild } from "./against.js";
import { clusterFigures } from "./cluster.js";
import { contextBuild } from "./context-build.js";
import {
  channelTurns,
  type Figure,
  FULL,
  QUICK,
  readOnlyBatch,
  sandboxCost,
  soak,
  startAndIdle,
  throughput,
} from "./figures.js";
import { promptCacheFigures } from "./prompt-cache.js";
import { streamingFigures } from "./streaming.js";

const quick = process.argv.includes("--quick");
const againstAt = process.argv.indexOf("--against");
const against = againstAt === -1 ? undefined : process.argv[againstAt + 1];
const onlyAt = process.argv.indexOf("--only");
const only = against ? ["against"] : onlyAt === -1 ? undefined : (process.argv[onlyAt + 1] ?? "").split(",");
const sizes = quick ? QUICK : FULL;
const root = packageRoot();
const started = Date.now();

const steps: Array<[string, () => Promise<Figure[]>]> = [
  ["telegram", () => channelTurns("telegram", sizes)],
  ["discord", () => channelTurns("discord", sizes)],
  ["streaming", () => streamingFigures(sizes)],
  ["start", () => startAndIdle(sizes)],
  ["throughput", () => throughput(sizes)],
  ["context", contextBuild],
  ["sandbox", sandboxCost],
  ["batch", readOnlyBatch],
  ["soak", () => soak(sizes)],
  ["cluster", () => clusterFigures(sizes)],
  ["cache", promptCacheFigures],
];
if (against) steps.push(["against", () => againstBuild(against, sizes)]);

const figures: Figure[] = [];
for (const [name, run] of steps) {
  if (only && !only.includes(name)) continue;
  process.stderr.write(`-- ${name}\n`);
  figures.push(...(await run()));
}

const passes = (f: Figure) =>
  f.target.report
    ? "report"
    : f.target.max !== undefined
      ? f.ratio <= f.target.max
        ? "yes"
        : "NO"
      : f.ratio >= (f.target.min ?? 0)
        ? "yes"
        : "NO";
const targetText = (f: Figure) =>
  f.target.report ? "report" : f.target.max !== undefined ? `≤ ${f.target.max}×` : `≥ ${(f.target.min ?? 0) * 100}%`;
const ratioText = (f: Figure) =>
  Number.isNaN(f.ratio)
    ? "-"
    : f.target.min !== undefined
      ? `${(f.ratio * 100).toFixed(1)}%`
      : `${f.ratio.toFixed(2)}×`;
const machine = `${cpus().length} × ${cpus()[0]?.model.trim() ?? "cpu"}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.versions.node}`;
const table = [
  "| figure | pincer | baseline | ratio | target | met |",
  "|---|---|---|---|---|---|",
  ...figures.map(
    (f) => `| ${f.figure} | ${f.pincer} | ${f.baseline} | ${ratioText(f)} | ${targetText(f)} | ${passes(f)} |`,
  ),
].join("\n");
const when = new Date().toISOString();
console.log(
  `\n${quick ? "Quick run" : "Full run"}, ${when}, ${machine}, ${((Date.now() - started) / 1000).toFixed(0)} s\n`,
);
console.log(table);

const results = join(root, "bench/results");
mkdirSync(results, { recursive: true });
writeFileSync(
  join(results, `${when.replaceAll(":", "-")}${quick ? "-quick" : ""}.json`),
  JSON.stringify({ when, machine, quick, sizes, figures }, null, 2),
);

if (!only) {
  const docs = join(root, "docs/benchmarks.md");
  const text = readFileSync(docs, "utf8");
  const begin = "<!-- table:begin -->";
  const end = "<!-- table:end -->";
  const how = quick ? "`npm run bench -- --quick`, smaller samples" : "`npm run bench`";
  const fresh = `${begin}\nMeasured ${when.slice(0, 10)} on ${machine} (${how}, ${((Date.now() - started) / 1000).toFixed(0)} s).\n\n${table}\n${end}`;
  writeFileSync(docs, text.replace(new RegExp(`${begin}[\\s\\S]*${end}`), fresh));
}
