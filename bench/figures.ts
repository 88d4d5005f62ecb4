/**
 * Each figure of the benchmark table: what is measured for pincer, what for its baseline in the
 * same run, and how the two compare. Channel figures drive the built daemon as a child process.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { runAgentLoop } from "../src/agent/loop.js";
import { MessageBus } from "../src/bus/bus.js";
import { loadConfig } from "../src/config/config.js";
import { createOpenAIModel } from "../src/llm/model.js";
import { buildBwrapArgs, sandboxEnv } from "../src/tools/exec/bwrap-args.js";
import { runProcess } from "../src/tools/exec/run-process.js";
import { checkSandbox, inspectHost } from "../src/tools/exec/sandbox-check.js";
import { ToolRegistry } from "../src/tools/registry.js";
import type { Tool, ToolContext } from "../src/tools/tool.js";
import { startFakeOpenAI } from "../test/fakes/openai-server.js";
import { userMessage } from "../test/helpers/app.js";
import { HEAP_SNAPSHOT_OPTIONS, liveHeapMB } from "./live-heap.js";
import { type Bot, drainTelegram, type Kind, type Platforms, startBot, startPlatforms } from "./processes.js";
import { summary } from "./stats.js";

export interface Figure {
  figure: string;
  pincer: string;
  baseline: string;
  ratio: number;
  /** What the ratio must be: at most (`max`) or at least (`min`). */
  target: { max?: number; min?: number; report?: true };
  unit?: string;
}

export interface Sizes {
  turns: number;
  warmup: number;
  readyRounds: number;
  chats: number;
  soakTurns: number;
  /** How long a process is left alone before its memory is read. */
  settleMs: number;
}

export const FULL: Sizes = { turns: 200, warmup: 20, readyRounds: 5, chats: 500, soakTurns: 10_000, settleMs: 3000 };
export const QUICK: Sizes = { turns: 30, warmup: 5, readyRounds: 1, chats: 40, soakTurns: 300, settleMs: 1000 };

const fmt = (value: number, unit: string) => `${value.toFixed(unit === "MB" ? 1 : 2)} ${unit}`;

/** Telegram or Discord turns with a zero-latency model, pincer and the bare bot alternating. */
export async function channelTurns(platform: "telegram" | "discord", sizes: Sizes): Promise<Figure[]> {
  const model = await startFakeOpenAI();
  model.respond(() => ({ content: "pong" }));
  const side = { telegram: platform === "telegram", discord: platform === "discord" };
  const places: Record<Kind, Platforms> = { pincer: await startPlatforms(), baseline: await startPlatforms() };
  const bots: Record<Kind, Bot> = {
    pincer: await startBot("pincer", { model, platforms: places.pincer, channels: side }),
    baseline: await startBot("baseline", { model, platforms: places.baseline, channels: side }),
  };
  const samples: Record<Kind, number[]> = { pincer: [], baseline: [] };
  try {
    for (let i = 0; i < sizes.warmup + sizes.turns; i++) {
      for (const kind of ["pincer", "baseline"] as const) {
        const took = await oneTurn(platform, places[kind], i);
        if (i >= sizes.warmup) samples[kind].push(took);
      }
    }
  } finally {
    await Promise.all([bots.pincer.stop(), bots.baseline.stop()]);
    await Promise.all([places.pincer.close(), places.baseline.close(), model.close()]);
  }
  const p = summary(samples.pincer);
  const b = summary(samples.baseline);
  const name = platform === "telegram" ? "Telegram" : "Discord";
  return [
    {
      figure: `${name} turn p50`,
      pincer: fmt(p.median, "ms"),
      baseline: fmt(b.median, "ms"),
      ratio: p.median / b.median,
      target: { max: 1.3 },
    },
    {
      figure: `${name} turn p99`,
      pincer: fmt(p.p99, "ms"),
      baseline: fmt(b.p99, "ms"),
      ratio: p.p99 / b.p99,
      target: { max: 1.3 },
    },
  ];
}

const USER = { id: "200000000000000001", username: "bench" };

async function oneTurn(platform: "telegram" | "discord", places: Platforms, i: number): Promise<number> {
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

/**
 * Start to ready with both channels, resident memory once idle, and again after the first reply
 * (pincer loads its tokenizer's tables with the first turn); alternating rounds.
 */
export async function startAndIdle(sizes: Sizes): Promise<Figure[]> {
  const model = await startFakeOpenAI();
  model.respond(() => ({ content: "pong" }));
  const ready: Record<Kind, number[]> = { pincer: [], baseline: [] };
  const rss: Record<Kind, number[]> = { pincer: [], baseline: [] };
  const warm: Record<Kind, number[]> = { pincer: [], baseline: [] };
  const first: Record<Kind, number[]> = { pincer: [], baseline: [] };
  const settle = () => new Promise((resolve) => setTimeout(resolve, sizes.settleMs));
  try {
    for (let round = 0; round < sizes.readyRounds; round++) {
      for (const kind of ["baseline", "pincer"] as const) {
        const platforms = await startPlatforms();
        const bot = await startBot(kind, { model, platforms });
        ready[kind].push(bot.readyMs);
        await settle();
        rss[kind].push(bot.rssBytes() / 1024 / 1024);
        first[kind].push(await oneTurn("telegram", platforms, 0));
        await settle();
        warm[kind].push(bot.rssBytes() / 1024 / 1024);
        await bot.stop();
        await platforms.close();
      }
    }
  } finally {
    await model.close();
  }
  const r = { pincer: summary(ready.pincer).median, baseline: summary(ready.baseline).median };
  const m = { pincer: summary(rss.pincer).median, baseline: summary(rss.baseline).median };
  const w = { pincer: summary(warm.pincer).median, baseline: summary(warm.baseline).median };
  const f = { pincer: summary(first.pincer).median, baseline: summary(first.baseline).median };
  return [
    {
      figure: "start to ready, both channels",
      pincer: fmt(r.pincer, "ms"),
      baseline: fmt(r.baseline, "ms"),
      ratio: r.pincer / r.baseline,
      target: { max: 1.2 },
    },
    {
      figure: "idle RSS, both channels",
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
      figure: "RSS after the first reply, both channels",
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
    // The first reply after a start loads the tokenizer and the model client; it has its own row.
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

/**
 * Memory after a soak of many short turns across many chats: RSS against the same process idle
 * and after its first reply (the first turn loads the tokenizer's tables); then, in a second run,
 * the live heap (heap snapshots, taken after a full collection) after the first reply and after
 * the soak, which is what says whether anything leaks. Snapshots cost memory themselves, so the
 * RSS run takes none.
 */
export async function soak(sizes: Sizes): Promise<Figure[]> {
  const chats = Math.min(500, sizes.soakTurns);
  const what = `after ${sizes.soakTurns.toLocaleString("en")} turns across ${chats} chats`;
  const rss = await soakOnce(sizes, chats, (bot) => bot.rssBytes() / 1024 / 1024);
  const heap = await soakOnce(sizes, chats, liveHeapMB, HEAP_SNAPSHOT_OPTIONS);
  return [
    {
      figure: `RSS ${what}`,
      pincer: fmt(rss.after, "MB"),
      baseline: `${fmt(rss.idle, "MB")} (idle)`,
      ratio: rss.after / rss.idle,
      target: { max: 1.3 },
    },
    {
      figure: `RSS ${what}, against the first reply`,
      pincer: fmt(rss.after, "MB"),
      baseline: `${fmt(rss.warm, "MB")} (after one reply)`,
      ratio: rss.after / rss.warm,
      target: { max: 1.3 },
    },
    {
      figure: `live heap ${what} (heap snapshot)`,
      pincer: fmt(heap.after, "MB"),
      baseline: `${fmt(heap.warm, "MB")} (after one reply)`,
      ratio: heap.after / heap.warm,
      target: { max: 1.3 },
    },
  ];
}

async function soakOnce(
  sizes: Sizes,
  chats: number,
  measure: (bot: Bot) => number | Promise<number>,
  nodeOptions?: string,
) {
  const model = await startFakeOpenAI();
  model.respond(() => ({ content: "ok" }));
  const platforms = await startPlatforms();
  const env = nodeOptions ? { NODE_OPTIONS: nodeOptions } : undefined;
  const bot = await startBot("pincer", { model, platforms, channels: { telegram: true, discord: false }, env });
  const { telegram } = platforms;
  const settle = () => new Promise((resolve) => setTimeout(resolve, sizes.settleMs));
  try {
    await settle();
    // The heap run has no use for an idle snapshot.
    const idle = nodeOptions ? Number.NaN : await measure(bot);
    await oneTurn("telegram", platforms, 0);
    await settle();
    const warm = await measure(bot);
    // In waves of one message per chat, so the queue never holds more than the chats.
    for (let sent = 0; sent < sizes.soakTurns; ) {
      const wave = Math.min(chats, sizes.soakTurns - sent);
      const before = telegram.sent.length;
      for (let chat = 1; chat <= wave; chat++) {
        telegram.pushUpdate({
          message: {
            chat: { id: chat, type: "private", first_name: "C" },
            from: { id: chat, is_bot: false, first_name: "C" },
            text: `turn ${sent + chat}`,
          } as never,
        });
      }
      await telegram.waitFor(() => telegram.sent.length >= before + wave, 120_000);
      sent += wave;
      // The fake keeps every call; forget them so the bench process does not grow instead.
      telegram.sent.length = 0;
    }
    await drainTelegram(telegram);
    await settle();
    return { idle, warm, after: await measure(bot) };
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
    signal: new AbortController().signal,
    bus: new MessageBus(),
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
