import type { ChatRequest } from "../test/fakes/openai-server.js";
import { startFakeOpenAI } from "../test/fakes/openai-server.js";
import { type Figure, oneTurn, type Sizes } from "./figures.js";
import { type Bot, type Platforms, startBot, startPlatforms } from "./processes.js";
import { summary } from "./stats.js";

/** A slow answer: 100 pieces 10 ms apart, about a second of writing, as a model streams. */
const SLOW = "word ".repeat(100).trim();

const lastUser = (request: ChatRequest) =>
  String(request.messages.filter((m) => m.role === "user").at(-1)?.content ?? "")
    .split("\n")
    .at(-1) ?? "";

/**
 * Streamed replies (issue 26), two pincer daemons side by side on Telegram, one with
 * agent.streamReplies on (the default, private chats), one with it off: how soon a slow answer's
 * first words show, against when the whole answer arrives without streaming; and what streaming
 * adds to a quick turn (a zero-latency model), against the same turn with it off.
 */
export async function streamingFigures(sizes: Sizes): Promise<Figure[]> {
  const model = await startFakeOpenAI();
  // The same second of writing either way: streamed in pieces, or all at once at its end.
  model.respond((request) => {
    if (!lastUser(request).startsWith("slow")) return { content: "pong" };
    return request.stream ? { content: SLOW, chunkDelayMs: 10 } : { content: SLOW, delayMs: 100 * 10 };
  });
  const started: Array<{ places: Platforms; bot: Bot }> = [];
  const add = async (streamReplies: "private" | "off") => {
    const places = await startPlatforms();
    const telegramOnly = { telegram: true, discord: false };
    const bot = await startBot("pincer", {
      model,
      platforms: places,
      channels: telegramOnly,
      config: { agent: { streamReplies } },
    });
    started.push({ places, bot });
    return places;
  };
  const quick = { on: [] as number[], off: [] as number[] };
  const slow = { firstWords: [] as number[], whole: [] as number[] };
  try {
    const on = await add("private");
    const off = await add("off");
    for (let i = 0; i < sizes.warmup + sizes.turns; i++) {
      const tookOn = await oneTurn("telegram", on, i);
      const tookOff = await oneTurn("telegram", off, i);
      if (i < sizes.warmup) continue;
      quick.on.push(tookOn);
      quick.off.push(tookOff);
    }
    for (let i = 0; i < Math.max(5, Math.floor(sizes.turns / 5)); i++) {
      slow.firstWords.push(await slowTurn(on, i, true));
      slow.whole.push(await slowTurn(off, i, false));
    }
  } finally {
    await Promise.all(started.map((s) => s.bot.stop()));
    await Promise.all([...started.map((s) => s.places.close()), model.close()]);
  }
  const [firstWords, whole, on, off] = [slow.firstWords, slow.whole, quick.on, quick.off].map(summary);
  return [
    {
      figure: "Telegram, a ~1 s answer: first words shown (streamed), against the whole answer unstreamed, p50",
      pincer: `${firstWords.median.toFixed(2)} ms`,
      baseline: `${whole.median.toFixed(2)} ms`,
      ratio: firstWords.median / whole.median,
      target: { max: 0.5 },
    },
    ...(["median", "p99"] as const).map((q) => ({
      figure: `Telegram turn ${q === "median" ? "p50" : "p99"}, streaming on, against the same turn with it off`,
      pincer: `${on[q].toFixed(2)} ms`,
      baseline: `${off[q].toFixed(2)} ms`,
      ratio: on[q] / off[q],
      target: { max: 1.2 },
    })),
  ];
}

/** One slow answer: ms until its first words show (a native draft), or until the whole reply is sent. */
async function slowTurn(places: Platforms, i: number, firstWords: boolean): Promise<number> {
  const { telegram } = places;
  const drafts = telegram.drafts.length;
  const sent = telegram.sent.length;
  const started = performance.now();
  telegram.pushUpdate({
    message: {
      chat: { id: 4242, type: "private", first_name: "Bench" },
      from: { id: 4242, is_bot: false, first_name: "Bench" },
      text: `slow ${i}`,
    } as never,
  });
  if (firstWords) await telegram.waitFor(() => telegram.drafts.length > drafts, 10_000);
  const took = performance.now() - started;
  await telegram.waitFor(() => telegram.sent.length > sent, 20_000);
  return firstWords ? took : performance.now() - started;
}
