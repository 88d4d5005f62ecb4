/**
 * `npm run bench -- --against DIR`: Telegram turns of this checkout's pincer, of the built checkout in DIR (an older
 * commit: `git worktree add DIR COMMIT`, `npm ci` or a node_modules link, `npm run build`) and of the bare bot, taking
 * turns one message at a time in one run (the wall clock and each process's CPU time), then their starts in turns
 * (start to ready, idle RSS). A whole run's ratio moves with the machine's load more than most changes do; two builds
 * measured side by side under the same load say whether a change made them slower.
 */
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { startFakeOpenAI } from "../test/fakes/openai-server.js";
import { type Figure, oneTurn, type Sizes, startRounds } from "./figures.js";
import { type Bot, type Platforms, startBot, startPlatforms } from "./processes.js";
import { summary } from "./stats.js";

export async function againstBuild(dir: string, sizes: Sizes): Promise<Figure[]> {
  const root = resolve(dir);
  if (!existsSync(join(root, "dist/src/cli/main.js")))
    throw new Error(`${root} has no built pincer: npm run build there`);
  const model = await startFakeOpenAI();
  model.respond(() => ({ content: "pong" }));
  const contenders: Array<{ name: string; places: Platforms; bot: Bot; samples: number[]; cpu: number }> = [];
  const add = async (name: string, kind: "pincer" | "baseline", from?: string) => {
    const places = await startPlatforms();
    const channels = { telegram: true, discord: false };
    contenders.push({
      name,
      places,
      bot: await startBot(kind, { model, platforms: places, channels, root: from }),
      samples: [],
      cpu: 0,
    });
  };
  try {
    await add("this checkout", "pincer");
    await add(root, "pincer", root);
    await add("bare", "baseline");
    for (let i = 0; i < sizes.warmup + sizes.turns; i++) {
      // The two builds swap places every round: whichever goes right after the other is measured slower or faster.
      const [a, b, bare] = contenders;
      for (const c of i % 2 ? [b, a, bare] : [a, b, bare]) {
        const cpuBefore = cpuMs(c.bot);
        const took = await oneTurn("telegram", c.places, i);
        if (i >= sizes.warmup) {
          c.samples.push(took);
          c.cpu += cpuMs(c.bot) - cpuBefore;
        }
      }
    }
  } finally {
    await Promise.all(contenders.map((c) => c.bot.stop()));
    await Promise.all([...contenders.map((c) => c.places.close()), model.close()]);
  }
  const [here, there, bare] = contenders.map((c) => summary(c.samples).median);
  const [cpuHere, cpuThere, cpuBare] = contenders.map((c) => c.cpu / sizes.turns);
  const row = (figure: string, a: number, b: number): Figure => ({
    figure,
    pincer: `${a.toFixed(2)} ms`,
    baseline: `${b.toFixed(2)} ms`,
    ratio: a / b,
    target: { report: true },
  });
  // Then starts, the three taking turns: start to ready and idle RSS in the default configuration.
  const starts = await startRounds([{ kind: "pincer" }, { kind: "pincer", root }, { kind: "baseline" }], sizes);
  const [readyHere, readyThere, readyBare] = starts.map((s) => summary(s.ready).median);
  const [rssHere, rssThere, rssBare] = starts.map((s) => summary(s.rss).median);
  const mb = (figure: string, a: number, b: number) => ({
    ...row(figure, a, b),
    pincer: `${a.toFixed(1)} MB`,
    baseline: `${b.toFixed(1)} MB`,
  });
  return [
    row("start to ready, this checkout against the bare bot", readyHere, readyBare),
    row(`start to ready, ${root} against the bare bot`, readyThere, readyBare),
    row(`start to ready, this checkout against ${root}`, readyHere, readyThere),
    mb("idle RSS, this checkout against the bare bot", rssHere, rssBare),
    mb(`idle RSS, ${root} against the bare bot`, rssThere, rssBare),
    mb(`idle RSS, this checkout against ${root}`, rssHere, rssThere),
    row("Telegram turn p50, this checkout against the bare bot", here, bare),
    row(`Telegram turn p50, ${root} against the bare bot`, there, bare),
    row(`Telegram turn p50, this checkout against ${root}`, here, there),
    // Less moved by the machine's load than the wall clock: the processes' own CPU time over the measured turns.
    row(`CPU per turn, this checkout against ${root}`, cpuHere, cpuThere),
    row(`CPU per turn, ${root} against the bare bot`, cpuThere, cpuBare),
  ];
}

/** The bot's user and system CPU time so far, from /proc (10 ms ticks: summed over many turns). */
function cpuMs(bot: Bot): number {
  const fields = readFileSync(`/proc/${bot.child.pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}
