/**
 * Where a bot's allocation goes during the soak, garbage included: one warm-up wave, then the
 * inspector's sampling heap profiler over `turns` more; prints KB allocated per turn by package,
 * by allocating function and by the nearest frame of pincer's own code, and keeps the profile
 * (open it in Chrome's DevTools, Memory tab). With `promoted`, only what outlived a scavenge (moved to the old generation
 * or still alive at the end): what makes V8 grow the old space.
 *
 *   npx tsx bench/alloc-profile.ts [turns=900] [pincer|baseline] [promoted]
 */
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { packageRoot } from "../src/paths.js";
import { startFakeOpenAI } from "../test/fakes/openai-server.js";
import { soakWave } from "./figures.js";
import { type Kind, startBot, startPlatforms } from "./processes.js";

const [turnsArg = "900", kindArg = "pincer", promoted] = process.argv.slice(2);
const turns = Number(turnsArg);
const chats = 300;
const file = join(tmpdir(), `pincer-alloc-${kindArg}-${Date.now()}.heapprofile`);
const model = await startFakeOpenAI();
model.respond(() => ({ content: "ok" }));
const places = await startPlatforms();
const preload = pathToFileURL(join(packageRoot(), "bench/alloc-probe.mjs")).href;
const bot = await startBot(kindArg as Kind, {
  model,
  platforms: places,
  probe: true,
  env: { NODE_OPTIONS: `--import ${preload}` },
});
const ask = (message: string) =>
  new Promise<void>((resolve) => {
    bot.child.once("message", () => resolve());
    bot.child.send(message);
  });
try {
  await soakWave(places.telegram, chats, 0);
  await ask(promoted === "promoted" ? "alloc-start promoted" : "alloc-start");
  for (let sent = chats; sent < chats + turns; sent += chats) {
    await soakWave(places.telegram, chats, sent);
    model.requests.length = 0;
  }
  await ask(`alloc-stop ${file}`);
} finally {
  await bot.stop();
  await places.close();
  await model.close();
}

interface Node {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children?: Node[];
}
const where = (f: Node["callFrame"]) =>
  `${f.functionName || "(anonymous)"} ${f.url.includes("node_modules/") ? f.url.split("node_modules/").at(-1) : f.url.replace(/^.*\/dist\//, "dist/")}:${f.lineNumber}`;
const byPackage = new Map<string, number>();
const byFunction = new Map<string, number>();
const byOwnFrame = new Map<string, number>();
const add = (map: Map<string, number>, key: string, bytes: number) => map.set(key, (map.get(key) ?? 0) + bytes);
const walk = (node: Node, stack: Node["callFrame"][]) => {
  const frames = [...stack, node.callFrame];
  if (node.selfSize > 0) {
    const url = node.callFrame.url;
    add(
      byPackage,
      url.includes("node_modules/")
        ? (url.split("node_modules/").at(-1)?.split("/")[0] ?? url)
        : url.includes("/dist/")
          ? "pincer"
          : url.split(":")[0] || "(native)",
      node.selfSize,
    );
    add(byFunction, where(node.callFrame), node.selfSize);
    const own = frames.findLast((f) => /\/dist\/(src|channels)\//.test(f.url));
    add(byOwnFrame, own ? where(own) : "(no pincer frame)", node.selfSize);
  }
  for (const child of node.children ?? []) walk(child, frames);
};
walk((JSON.parse(readFileSync(file, "utf8")) as { head: Node }).head, []);
const total = [...byPackage.values()].reduce((a, b) => a + b, 0);
console.log(
  `${kindArg}: ${(total / turns / 1024).toFixed(0)} KB ${promoted === "promoted" ? "promoted" : "allocated"} per turn over ${turns} turns; profile: ${file}`,
);
for (const [title, map] of [
  ["package", byPackage],
  ["function", byFunction],
  ["nearest pincer frame", byOwnFrame],
] as const) {
  console.log(`\nby ${title}:`);
  for (const [key, bytes] of [...map].sort((a, b) => b[1] - a[1]).slice(0, 15)) {
    console.log(`${(bytes / turns / 1024).toFixed(1).padStart(7)} KB  ${key}`);
  }
}
