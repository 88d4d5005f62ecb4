/**
 * Clustered mode against embedded (issue 24, part 8): the same load on the embedded daemon, on one
 * clustered process and on two clustered processes sharing one PostgreSQL: Telegram turns one
 * after another (p50, p99), then many chats at once against a slow model (throughput). Needs
 * Debian's `postgresql`; without it the step is skipped with one loud line.
 */
import pg from "pg";
import { type FakeOpenAI, startFakeOpenAI } from "../test/fakes/openai-server.js";
import { postgresBinDir, startPostgres } from "../test/helpers/postgres.js";
import { type Figure, oneTurn, type Sizes } from "./figures.js";
import { type Bot, type Platforms, startBot, startPlatforms } from "./processes.js";
import { summary } from "./stats.js";

const MODEL_MS = 200;
/** agent.maxConcurrentTurns, per process. */
const CAP = 8;

interface Setup {
  name: string;
  processes: number;
  places: Platforms;
  bots: Bot[];
  turns: number[];
  turnsPerSecond: number;
}

export async function clusterFigures(sizes: Sizes): Promise<Figure[]> {
  if (!postgresBinDir()) {
    console.warn(
      '\n!!! SKIPPED: bench "cluster" needs PostgreSQL (Debian package "postgresql": apt install postgresql).\n',
    );
    return [];
  }
  const server = await startPostgres();
  const model = await startFakeOpenAI();
  const setups: Setup[] = [];
  try {
    setups.push(await start(model, "embedded", 0));
    setups.push(await start(model, "clustered, 1 process", 1, await server.newDatabase()));
    setups.push(await start(model, "clustered, 2 processes", 2, await server.newDatabase()));
    model.respond(() => ({ content: "pong" }));
    for (let i = 0; i < sizes.warmup + sizes.turns; i++) {
      for (const s of setups) {
        const took = await oneTurn("telegram", s.places, i);
        if (i >= sizes.warmup) s.turns.push(took);
      }
    }
    model.respond(() => ({ content: "done", delayMs: MODEL_MS }));
    for (const s of setups) s.turnsPerSecond = await manyChats(s.places, sizes.chats);
  } finally {
    await Promise.all(setups.flatMap((s) => s.bots.map((b) => b.stop())));
    await Promise.all(setups.map((s) => s.places.close()));
    await model.close();
    await server.stop();
  }
  return figures(setups, sizes);
}

/** One setup on its own fake Telegram: the embedded daemon, or `processes` gateways on `url`. */
async function start(model: FakeOpenAI, name: string, processes: number, url?: string): Promise<Setup> {
  const places = await startPlatforms();
  const options = { model, platforms: places, channels: { telegram: true, discord: false } };
  const env = url ? { PINCER_DATABASE_URL: url } : undefined;
  const bots = [await startBot("pincer", { ...options, env })];
  for (let i = 1; i < processes; i++) bots.push(await startBot("pincer", { ...options, env, unwatched: true }));
  if (url) await joined(url, processes);
  return { name, processes, places, bots, turns: [], turnsPerSecond: 0 };
}

async function joined(url: string, processes: number): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const { rows } = await client.query<{ n: number }>("SELECT count(*)::int AS n FROM cluster_processes");
      if (rows[0]?.n === processes) return;
      if (Date.now() > deadline) throw new Error(`${processes} clustered processes did not join`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  } finally {
    await client.end();
  }
}

/** One message from each of `chats` new chats at once; turns per second until the last reply. */
async function manyChats(places: Platforms, chats: number): Promise<number> {
  const { telegram } = places;
  const before = telegram.sent.length;
  const started = performance.now();
  for (let chat = 1; chat <= chats; chat++) {
    telegram.pushUpdate({
      message: {
        chat: { id: 10_000 + chat, type: "private", first_name: "C" },
        from: { id: 10_000 + chat, is_bot: false, first_name: "C" },
        text: "hi",
      } as never,
    });
  }
  await telegram.waitFor(() => telegram.sent.length >= before + chats, 300_000);
  return chats / ((performance.now() - started) / 1000);
}

function figures(setups: Setup[], sizes: Sizes): Figure[] {
  const [embedded, ...clustered] = setups;
  const q = (s: Setup, at: "median" | "p99") => summary(s.turns)[at];
  const rows = clustered.flatMap((s) => [
    ...(["median", "p99"] as const).map((at) => ({
      figure: `Telegram turn ${at === "median" ? "p50" : "p99"}, ${s.name}`,
      pincer: `${q(s, at).toFixed(2)} ms`,
      baseline: `${q(embedded, at).toFixed(2)} ms (embedded)`,
      ratio: q(s, at) / q(embedded, at),
      target: { report: true as const },
    })),
    {
      figure: `${sizes.chats} chats × 1 message, model ${MODEL_MS} ms, cap ${CAP} per process, ${s.name}`,
      pincer: `${s.turnsPerSecond.toFixed(1)} turns/s`,
      baseline: `${embedded.turnsPerSecond.toFixed(1)} turns/s (embedded)`,
      ratio: s.turnsPerSecond / embedded.turnsPerSecond,
      target: { report: true as const },
    },
  ]);
  console.log(sideBySide(setups, sizes));
  const detail = setups.map((s) => ({ name: s.name, turnsMs: summary(s.turns), turnsPerSecond: s.turnsPerSecond }));
  return rows.map((row, i) => (i === 0 ? { ...row, detail } : row));
}

/** The three setups in columns, each clustered figure with its ratio to embedded. */
function sideBySide(setups: Setup[], sizes: Sizes): string {
  const [embedded] = setups;
  const cell = (value: number, base: number, unit: string, s: Setup) =>
    s === embedded
      ? `${value.toFixed(unit === "ms" ? 2 : 1)} ${unit}`
      : `${value.toFixed(unit === "ms" ? 2 : 1)} ${unit} (${(value / base).toFixed(2)}×)`;
  const line = (label: string, pick: (s: Setup) => number, unit: string) =>
    `| ${label} | ${setups.map((s) => cell(pick(s), pick(embedded), unit, s)).join(" | ")} |`;
  const ideal = (s: Setup) => (Math.max(1, s.processes) * CAP * 1000) / MODEL_MS;
  return [
    "",
    `| load | ${setups.map((s) => s.name).join(" | ")} |`,
    `|---|${setups.map(() => "---").join("|")}|`,
    line("Telegram turn p50", (s) => summary(s.turns).median, "ms"),
    line("Telegram turn p99", (s) => summary(s.turns).p99, "ms"),
    line(`${sizes.chats} chats × 1 message, model ${MODEL_MS} ms (turns/s)`, (s) => s.turnsPerSecond, "turns/s"),
    `| the cap's ideal (${CAP} per process) | ${setups.map((s) => `${ideal(s).toFixed(1)} turns/s`).join(" | ")} |`,
    "",
  ].join("\n");
}
