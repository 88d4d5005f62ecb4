/**
 * Each figure of the benchmark table: what is measured for pincer, what for its baseline in the
 * same run, and how the two compare. Channel figures drive the built daemon as a child process.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { pino } from "pino";
import { runAgentLoop } from "../src/agent/loop.js";
import { loadConfig } from "../src/config/config.js";
import { createOpenAIModel } from "../src/llm/model.js";
import { buildBwrapArgs, sandboxEnv } from "../src/tools/exec/bwrap-args.js";
import { runProcess } from "../src/tools/exec/run-process.js";
import { checkSandbox, inspectHost } from "../src/tools/exec/sandbox-check.js";
import { ToolRegistry } from "../src/tools/registry.js";
import type { Tool, ToolContext } from "../src/tools/tool.js";
import { startFakeOpenAI } from "../test/fakes/openai-server.js";
import { userMessage } from "../test/helpers/app.js";
import { testBus } from "../test/helpers/bus.js";
import { HEAP_SNAPSHOT_OPTIONS, liveHeapMB } from "./live-heap.js";
import {
  type Bot,
  type BotMemory,
  drainTelegram,
  type Kind,
  type Platforms,
  startBot,
  startPlatforms,
} from "./processes.js";
import { summary } from "./stats.js";

export interface Figure {
  figure: string;
  pincer: string;
  baseline: string;
  ratio: number;
  /** What the ratio must be: at most (`max`) or at least (`min`). */
  target: { max?: number; min?: number; report?: true };
  unit?: string;
  /** More than the table shows (the soak's memory wave by wave), kept in the run's JSON. */
  detail?: unknown;
}

export interface Sizes {
  turns: number;
  warmup: number;
  readyRounds: number;
  chats: number;
  soakTurns: number;
  /** The soak's waves: one message from each of this many chats. */
  soakChats: number;
  /** How long a process is left alone before its memory is read. */
  settleMs: number;
}

export const FULL: Sizes = {
  turns: 200,
  warmup: 20,
  readyRounds: 5,
  chats: 500,
  soakTurns: 6000,
  soakChats: 300,
  settleMs: 3000,
};
export const QUICK: Sizes = {
  turns: 30,
  warmup: 5,
  readyRounds: 1,
  chats: 40,
  soakTurns: 300,
  soakChats: 40,
  settleMs: 1000,
};

const fmt = (value: number, unit: string) => `${value.toFixed(unit === "MB" ? 1 : 2)} ${unit}`;

/**
 * Telegram or Discord turns with a zero-latency model, pincer and the bare bot alternating; on
 * Telegram also a bare bot that offers the model the tool schemas pincer sent (captured from
 * pincer's first request), so the request it serialises and the model parses weighs the same.
 */
export async function channelTurns(platform: "telegram" | "discord", sizes: Sizes): Promise<Figure[]> {
  const model = await startFakeOpenAI();
  model.respond(() => ({ content: "pong" }));
  const side = { telegram: platform === "telegram", discord: platform === "discord" };
  const contenders: Array<{ name: string; places: Platforms; bot: Bot; samples: number[] }> = [];
  const toolsFile = join(mkdtempSync(join(tmpdir(), "pincer-bench-tools-")), "tools.json");
  const add = async (name: string, kind: Kind, env?: NodeJS.ProcessEnv) => {
    const places = await startPlatforms();
    contenders.push({
      name,
      places,
      bot: await startBot(kind, { model, platforms: places, channels: side, env }),
      samples: [],
    });
  };
  try {
    await add("pincer", "pincer");
    await add("bare", "baseline");
    if (platform === "telegram") {
      await oneTurn(platform, contenders[0].places, -1);
      const tools = model.requests.find((r) => r.tools?.length)?.tools;
      if (!tools) throw new Error("pincer offered the model no tools");
      writeFileSync(toolsFile, JSON.stringify(tools));
      await add("bare + tools", "baseline", { BARE_TOOLS_FILE: toolsFile });
    }
    for (let i = 0; i < sizes.warmup + sizes.turns; i++) {
      for (const c of contenders) {
        const took = await oneTurn(platform, c.places, i);
        if (i >= sizes.warmup) c.samples.push(took);
      }
    }
  } finally {
    await Promise.all(contenders.map((c) => c.bot.stop()));
    await Promise.all([...contenders.map((c) => c.places.close()), model.close()]);
    rmSync(dirname(toolsFile), { recursive: true, force: true });
  }
  const [p, ...baselines] = contenders.map((c) => ({ name: c.name, ...summary(c.samples) }));
  const name = platform === "telegram" ? "Telegram" : "Discord";
  return baselines.flatMap((b) => {
    const against = b.name === "bare" ? "" : ", against a bare bot with the same tool schemas";
    return (["median", "p99"] as const).map((q) => ({
      figure: `${name} turn ${q === "median" ? "p50" : "p99"}${against}`,
      pincer: fmt(p[q], "ms"),
      baseline: fmt(b[q], "ms"),
      ratio: p[q] / b[q],
      target: { max: 1.3 },
    }));
  });
}

const USER = { id: "200000000000000001", username: "bench" };

export async function oneTurn(platform: "telegram" | "discord", places: Platforms, i: number): Promise<number> {
  if (platform === "telegram") {
    const { telegram } = places;
    const before = telegram.sent.length;
    const started = performance.now();
    telegram.pushUpdate({
      message: {
        chat: { id: 4242, type: "private", first_name: "Bench" },
        from: { id: 4242, is_bot: false, first_name: "Bench" },
        text: `ping ${i}`,
      } as never,
    });
    await telegram.waitFor(() => telegram.sent.length > before, 10_000);
    return performance.now() - started;
  }
  const { discord } = places;
  const replied = new Promise<number>((resolve) => {
    const off = discord.onSent(() => {
      off();
      resolve(performance.now());
    });
  });
  const started = performance.now();
  discord.dispatchMessage({ channelId: "140000000000000001", author: USER, content: `ping ${i}` });
  return (await replied) - started;
}

/** A bot to start: pincer (this checkout's, or the built checkout in `root`) or the bare bot. */
export type Starter = { kind: Kind; root?: string };

/** Each starter's start to ready, idle RSS, first reply and RSS after it, over `sizes.readyRounds` rounds in which the
 * starters take turns, each with both channels and the control page (pincer's default configuration). */
export async function startRounds(starters: Starter[], sizes: Sizes) {
  const model = await startFakeOpenAI();
  model.respond(() => ({ content: "pong" }));
  const seen = starters.map(() => ({
    ready: [] as number[],
    rss: [] as number[],
    first: [] as number[],
    warm: [] as number[],
  }));
  const settle = () => new Promise((resolve) => setTimeout(resolve, sizes.settleMs));
  try {
    for (let round = 0; round < sizes.readyRounds; round++) {
      for (const [i, { kind, root }] of starters.entries()) {
        const platforms = await startPlatforms();
        // The default configuration serves the control page too (on a free port here, not 7390).
        const bot = await startBot(kind, { model, platforms, root, env: { PINCER_WEB_ADDR: "127.0.0.1:0" } });
        seen[i].ready.push(bot.readyMs);
        await settle();
        seen[i].rss.push(bot.rssBytes() / 1024 / 1024);
        seen[i].first.push(await oneTurn("telegram", platforms, 0));
        await settle();
        seen[i].warm.push(bot.rssBytes() / 1024 / 1024);
        await bot.stop();
        await platforms.close();
      }
    }
  } finally {
    await model.close();
  }
  return seen;
}

/**
 * Start to ready with both channels, resident memory once idle, and again after the first reply
 * (pincer loads the model client with its first turn if the start-up probe has not); alternating rounds.
 */
export async function startAndIdle(sizes: Sizes): Promise<Figure[]> {
  const [baseline, pincer] = await startRounds([{ kind: "baseline" }, { kind: "pincer" }], sizes);
  const median = (key: keyof typeof pincer) => ({
    pincer: summary(pincer[key]).median,
    baseline: summary(baseline[key]).median,
  });
  const [r, m, w, f] = [median("ready"), median("rss"), median("warm"), median("first")];
  return [
    {
      figure: "start to ready, default configuration (both channels, control page)",
      pincer: fmt(r.pincer, "ms"),
      baseline: fmt(r.baseline, "ms"),
      ratio: r.pincer / r.baseline,
      target: { max: 1.2 },
    },
    {
      figure: "idle RSS, default configuration (both channels, control page)",
      pincer: fmt(m.pincer, "MB"),
      baseline: fmt(m.baseline, "MB"),
      ratio: m.pincer / m.baseline,
      target: { max: 1.2 },
    },
    {
      figure: "first Telegram reply after start",
      pincer: fmt(f.pincer, "ms"),
      baseline: fmt(f.baseline, "ms"),
      ratio: f.pincer / f.baseline,
      target: { report: true },
    },
    {
      figure: "RSS after the first reply, default configuration (both channels, control page)",
      pincer: fmt(w.pincer, "MB"),
      baseline: fmt(w.baseline, "MB"),
      ratio: w.pincer / w.baseline,
      target: { report: true },
    },
  ];
}

/** Many chats at once against a slow model: how close pincer gets to what its concurrency cap allows. */
export async function throughput(sizes: Sizes): Promise<Figure[]> {
  const model = await startFakeOpenAI();
  model.respond(() => ({ content: "done", delayMs: 200 }));
  const platforms = await startPlatforms();
  const bot = await startBot("pincer", { model, platforms, channels: { telegram: true, discord: false } });
  const { telegram } = platforms;
  try {
    // The first reply after a start may load the model client; it has its own row.
    await oneTurn("telegram", platforms, 0);
    const started = performance.now();
    for (let chat = 1; chat <= sizes.chats; chat++) {
      telegram.pushUpdate({
        message: {
          chat: { id: chat, type: "private", first_name: "C" },
          from: { id: chat, is_bot: false, first_name: "C" },
          text: "hi",
        } as never,
      });
    }
    await telegram.waitFor(() => telegram.sent.length >= sizes.chats + 1, 300_000);
    const took = performance.now() - started;
    const ideal = Math.ceil(sizes.chats / 8) * 200;
    return [
      {
        figure: `${sizes.chats} chats × 1 message, model 200 ms, cap 8`,
        pincer: fmt(took, "ms"),
        baseline: `${fmt(ideal, "ms")} (ideal)`,
        ratio: ideal / took,
        target: { min: 0.95 },
      },
    ];
  } finally {
    await bot.stop();
    await platforms.close();
    await model.close();
  }
}

const MB = (bytes: number) => bytes / 1024 / 1024;

/** The split of a bot's memory, in MB: what of the RSS is JavaScript heap (new and old space) and what is not. */
function split(rss: number, m: BotMemory) {
  const r = (v: number | undefined) => Math.round(MB(v ?? 0) * 10) / 10;
  return {
    rss: r(rss),
    heapTotal: r(m.heapTotal),
    heapUsed: r(m.heapUsed),
    newSpace: r(m.spaces.new_space),
    oldSpace: r(m.spaces.old_space),
    external: r(m.external),
    arrayBuffers: r(m.arrayBuffers),
  };
}

/**
 * Memory under load, side by side: pincer and the bare bot (both with grammy polling and
 * discord.js identified; the turns come through Telegram) each get the same waves of one message
 * from each of `soakChats` chats, wave by wave in turn, until `soakTurns`; after every wave both
 * are measured (VmRSS and process.memoryUsage() from inside). Then, in a second run, pincer's
 * live heap (heap snapshots, taken after a full collection) after the first reply and after the
 * soak, which is what says whether anything leaks; snapshots cost memory, so the RSS run takes none.
 */
export async function soak(sizes: Sizes): Promise<Figure[]> {
  const chats = Math.min(sizes.soakChats, sizes.soakTurns);
  const what = `after ${sizes.soakTurns.toLocaleString("en")} turns over ${chats} chats`;
  const model = await startFakeOpenAI();
  model.respond(() => ({ content: "ok" }));
  const kinds = ["pincer", "baseline"] as const;
  const places = { pincer: await startPlatforms(), baseline: await startPlatforms() };
  const bots = {
    pincer: await startBot("pincer", { model, platforms: places.pincer, probe: true }),
    baseline: await startBot("baseline", { model, platforms: places.baseline, probe: true }),
  };
  const waves: Array<{ turns: number; pincer: ReturnType<typeof split>; baseline: ReturnType<typeof split> }> = [];
  const measure = async (turns: number) => {
    const [p, b] = await Promise.all(kinds.map((k) => bots[k].memory()));
    const row = { turns, pincer: split(bots.pincer.rssBytes(), p), baseline: split(bots.baseline.rssBytes(), b) };
    waves.push(row);
    process.stderr.write(
      `   ${turns} turns: pincer ${JSON.stringify(row.pincer)} bare ${JSON.stringify(row.baseline)}\n`,
    );
    return row;
  };
  const settle = () => new Promise((resolve) => setTimeout(resolve, sizes.settleMs));
  let idle: Awaited<ReturnType<typeof measure>>;
  let final: Awaited<ReturnType<typeof measure>>;
  try {
    await settle();
    idle = await measure(0);
    for (const k of kinds) await oneTurn("telegram", places[k], 0);
    await settle();
    await measure(1);
    for (let sent = 0; sent < sizes.soakTurns; ) {
      const wave = Math.min(chats, sizes.soakTurns - sent);
      for (const k of kinds) await soakWave(places[k].telegram, wave, sent);
      sent += wave;
      model.requests.length = 0;
      await measure(sent);
    }
    for (const k of kinds) await drainTelegram(places[k].telegram);
    await settle();
    final = await measure(sizes.soakTurns);
  } finally {
    await Promise.all(kinds.map((k) => bots[k].stop()));
    await Promise.all([places.pincer.close(), places.baseline.close(), model.close()]);
  }
  const heap = await liveHeapSoak(sizes, chats);
  const row = (figure: string, key: keyof ReturnType<typeof split>, target: Figure["target"]): Figure => ({
    figure: `${figure} ${what}`,
    pincer: fmt(final.pincer[key], "MB"),
    baseline: fmt(final.baseline[key], "MB"),
    ratio: final.pincer[key] / final.baseline[key],
    target,
  });
  // One sample lands anywhere in each bot's cycle of collections; the waves show the whole cycle.
  const loaded = waves.filter((w) => w.turns >= chats);
  const over = (pick: (values: number[]) => number, figure: string): Figure => {
    const p = pick(loaded.map((w) => w.pincer.rss));
    const b = pick(loaded.map((w) => w.baseline.rss));
    return {
      figure: `${figure} over the soak's waves`,
      pincer: fmt(p, "MB"),
      baseline: fmt(b, "MB"),
      ratio: p / b,
      target: { report: true },
    };
  };
  return [
    { ...row("RSS", "rss", { max: 1.3 }), detail: { idle, waves } },
    over((values) => summary(values).median, "RSS, median"),
    over((values) => Math.max(...values), "RSS, peak"),
    row("JavaScript heap (heapTotal)", "heapTotal", { report: true }),
    row("heap in use (heapUsed)", "heapUsed", { report: true }),
    row("external memory (external, array buffers included)", "external", { report: true }),
    {
      figure: `live heap ${what} (heap snapshot)`,
      pincer: fmt(heap.after, "MB"),
      baseline: `${fmt(heap.warm, "MB")} (after one reply)`,
      ratio: heap.after / heap.warm,
      target: { max: 1.3 },
    },
  ];
}

/** One message from each of `chats` private chats; resolves once every one is answered. */
export async function soakWave(telegram: Platforms["telegram"], chats: number, sent: number): Promise<void> {
  const before = telegram.sent.length;
  for (let chat = 1; chat <= chats; chat++) {
    telegram.pushUpdate({
      message: {
        chat: { id: chat, type: "private", first_name: "C" },
        from: { id: chat, is_bot: false, first_name: "C" },
        text: `turn ${sent + chat}`,
      } as never,
    });
  }
  await telegram.waitFor(() => telegram.sent.length >= before + chats, 120_000);
  // The fake keeps every call; forget them so the bench process does not grow instead.
  telegram.sent.length = 0;
}

async function liveHeapSoak(sizes: Sizes, chats: number) {
  const model = await startFakeOpenAI();
  model.respond(() => ({ content: "ok" }));
  const platforms = await startPlatforms();
  const bot = await startBot("pincer", { model, platforms, env: { NODE_OPTIONS: HEAP_SNAPSHOT_OPTIONS } });
  try {
    await oneTurn("telegram", platforms, 0);
    await new Promise((resolve) => setTimeout(resolve, sizes.settleMs));
    const warm = await liveHeapMB(bot);
    for (let sent = 0; sent < sizes.soakTurns; sent += chats) {
      await soakWave(platforms.telegram, Math.min(chats, sizes.soakTurns - sent), sent);
      model.requests.length = 0;
    }
    await drainTelegram(platforms.telegram);
    await new Promise((resolve) => setTimeout(resolve, sizes.settleMs));
    return { warm, after: await liveHeapMB(bot) };
  } finally {
    await bot.stop();
    await platforms.close();
    await model.close();
  }
}

/** A sandboxed `true` against a plain spawn of `true`, interleaved. */
export async function sandboxCost(): Promise<Figure[]> {
  const home = realpathSync(mkdtempSync(join(tmpdir(), "pincer-bench-exec-")));
  const workspace = join(home, "workspace");
  mkdirSync(workspace, { recursive: true });
  const config = loadConfig({
    OPENAI_API_KEY: "bench",
    PINCER_HOME: home,
    PINCER_SANDBOX: "bwrap",
    LOG_LEVEL: "silent",
  });
  const status = await checkSandbox(config);
  if (!status.ok || !status.bwrap) {
    return [
      {
        figure: "sandboxed `true`",
        pincer: "bwrap missing",
        baseline: "-",
        ratio: Number.NaN,
        target: { report: true },
      },
    ];
  }
  const env = sandboxEnv(process.env, workspace, []);
  const common = {
    cwd: workspace,
    env,
    timeoutSeconds: 30,
    signal: new AbortController().signal,
    maxBufferBytes: 1 << 20,
  };
  const args = buildBwrapArgs(
    inspectHost(),
    { workspace, workingDir: workspace, hidden: [home], network: false, env },
    ["true"],
  );
  const plain: number[] = [];
  const boxed: number[] = [];
  for (let i = 0; i < 105; i++) {
    let t = performance.now();
    await runProcess({ ...common, file: "true", args: [] });
    if (i >= 5) plain.push(performance.now() - t);
    t = performance.now();
    await runProcess({ ...common, file: status.bwrap, args });
    if (i >= 5) boxed.push(performance.now() - t);
  }
  rmSync(home, { recursive: true, force: true });
  const p = summary(boxed).median;
  const b = summary(plain).median;
  return [
    {
      figure: "sandboxed `true`",
      pincer: `${fmt(p, "ms")} (+${(p - b).toFixed(2)} ms)`,
      baseline: fmt(b, "ms"),
      ratio: p / b,
      target: { report: true },
    },
  ];
}

/** Four 100 ms read-only tool calls in one model reply against one such call. */
export async function readOnlyBatch(): Promise<Figure[]> {
  const model = await startFakeOpenAI();
  const client = createOpenAIModel({
    apiKey: "bench",
    baseUrl: model.url,
    model: "m",
    timeoutSeconds: 30,
    retries: 0,
    stream: false,
  });
  const slow: Tool = {
    name: "slow_read",
    description: "waits 100 ms",
    parameters: { type: "object", properties: {} },
    readOnly: true,
    execute: () => new Promise((resolve) => setTimeout(() => resolve("read"), 100)),
  };
  const registry = new ToolRegistry().register(slow);
  const ctx: ToolContext = {
    sessionKey: "console:bench",
    inbound: userMessage("bench", "go"),
    workspace: tmpdir(),
    seesOwnerMemory: true,
    signal: new AbortController().signal,
    bus: testBus(),
    log: pino({ level: "silent" }),
  };
  const turn = async (calls: number) => {
    model.enqueue(
      { toolCalls: Array.from({ length: calls }, () => ({ name: "slow_read", arguments: {} })) },
      { content: "done" },
    );
    const started = performance.now();
    await runAgentLoop(
      { model: client, registry, maxIterations: 5, log: ctx.log },
      { system: "s", history: [], user: { role: "user", content: "go" }, toolContext: ctx },
    );
    return performance.now() - started;
  };
  const one: number[] = [];
  const four: number[] = [];
  for (let i = 0; i < 22; i++) {
    const a = await turn(1);
    const b = await turn(4);
    if (i >= 2) {
      one.push(a);
      four.push(b);
    }
  }
  await model.close();
  const f = summary(four).median;
  const o = summary(one).median;
  return [
    {
      figure: "four 100 ms read-only tools in one reply",
      pincer: fmt(f, "ms"),
      baseline: `${fmt(o, "ms")} (one)`,
      ratio: f / o,
      target: { max: 1.2 },
    },
  ];
}
