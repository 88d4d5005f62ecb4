/**
 * Overhead of one turn beyond the model's own time: a message goes in on the bus, the reply comes
 * out on the bus; the time spent inside the model client's HTTP call is subtracted. The fake model
 * answers at once. Also measures building the context for conversations of 10 and 100,000 messages.
 *
 *   npx tsx bench/turn-overhead.ts
 */
import { pino } from "pino";
import { buildSystemPrompt, toChatMessage } from "../src/agent/context.js";
import { createApp } from "../src/app.js";
import { loadConfig } from "../src/config/config.js";
import { createOpenAIModel, type Model } from "../src/llm/model.js";
import { startFakeOpenAI } from "../test/fakes/openai-server.js";
import { tempHome, userMessage } from "../test/helpers/app.js";
import { ms, summary } from "./stats.js";

const TURNS = 100;
const fake = await startFakeOpenAI();
const home = tempHome("pincer-bench-");
const config = loadConfig({
  OPENAI_API_KEY: "bench",
  OPENAI_BASE_URL: fake.url,
  PINCER_HOME: home,
  PINCER_SANDBOX: "none",
  LOG_LEVEL: "silent",
});

let modelTime = 0;
const real = createOpenAIModel({ ...config.openai, timeoutSeconds: 30, retries: 0, stream: false });
const timed: Model = {
  async complete(request) {
    const start = performance.now();
    try {
      return await real.complete(request);
    } finally {
      modelTime += performance.now() - start;
    }
  },
};
const app = createApp(config, { log: pino({ level: "silent" }), model: timed });
let replied: () => void = () => {};
await app.start([
  {
    name: "console",
    start: () => app.bus.subscribeOutbound("console", async () => replied()),
    stop: async () => {},
  },
]);

const overheads: number[] = [];
const totals: number[] = [];
for (let i = 0; i < TURNS + 10; i++) {
  modelTime = 0;
  const done = new Promise<void>((resolve) => {
    replied = resolve;
  });
  const start = performance.now();
  app.bus.publishInbound(userMessage("bench", `message ${i}`));
  await done;
  const total = performance.now() - start;
  if (i >= 10) {
    totals.push(total);
    overheads.push(total - modelTime);
  }
}
const o = summary(overheads);
const t = summary(totals);
console.log(
  `turn, ${TURNS} turns after 10 warm-up: total median ${ms(t.median)}, model call median ${ms(t.median - o.median)}`,
);
console.log(`turn overhead beyond the model: median ${ms(o.median)}, p90 ${ms(o.p90)}`);

// Context building: the same work the worker does before each model call.
function contextCost(sessionKey: string): number {
  const samples: number[] = [];
  for (let i = 0; i < 200; i++) {
    const start = performance.now();
    const msg = userMessage(sessionKey, "hi");
    buildSystemPrompt({ workspace: config.workspace, skills: [], timezone: "UTC", now: new Date(), inbound: msg });
    app.conversations.recent(`console:${sessionKey}`, config.agent.contextTokens).map(toChatMessage);
    samples.push(performance.now() - start);
  }
  return summary(samples).median;
}
const filler = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    role: i % 2 === 0 ? ("user" as const) : ("assistant" as const),
    content: `message ${i} ${"lorem ipsum ".repeat(20)}`,
  }));
// 1,000 messages already overflow the token budget, so 1,000 vs 100,000 shows whether length costs anything.
app.conversations.append("console:small", filler(10));
app.conversations.append("console:medium", filler(1000));
for (let i = 0; i < 100; i++) app.conversations.append("console:large", filler(1000));
const small = contextCost("small");
const medium = contextCost("medium");
const large = contextCost("large");
console.log(
  `context build median: 10 messages ${ms(small)}, 1,000 messages ${ms(medium)}, ` +
    `100,000 messages ${ms(large)} (100,000 / 1,000 = ${(large / medium).toFixed(2)}; ` +
    `${app.conversations.recent("console:large", config.agent.contextTokens).length} messages fit the budget)`,
);

await app.stop();
await fake.close();
