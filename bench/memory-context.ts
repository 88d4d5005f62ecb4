/**
 * A 10,000-turn conversation: how large is the prompt, how long does building it take, and does
 * memory_search still find what was said in the first turns? The conversation grows the way a
 * real one does — a batch of turns, then the consolidation pincer runs after a turn — with an
 * in-process model that summarises at once, so the numbers are pincer's own work. Text mixes
 * English, Chinese, emoji and tool calls.
 *
 *   npx tsx bench/memory-context.ts
 */
import { statSync } from "node:fs";
import { pino } from "pino";
import { toChatMessage } from "../src/agent/context.js";
import { buildTurnContext } from "../src/agent/turn-context.js";
import { createApp } from "../src/app.js";
import { loadConfig } from "../src/config/config.js";
import type { Model } from "../src/llm/model.js";
import { createTokenCounter } from "../src/llm/tokens.js";
import { databasePath } from "../src/paths.js";
import type { StoredMessage } from "../src/store/store.js";
import { sqliteOf, tempHome, userMessage } from "../test/helpers/app.js";
import { toolContext } from "../test/helpers/tools.js";
import { turnContextDeps } from "./context-build.js";
import { ms, summary } from "./stats.js";

const TURNS = 10_000;
const BATCH = 10;
const SESSION = "console:bench";

let summaries = 0;
const model: Model = {
  async complete({ messages }) {
    summaries++;
    const text = String(messages[1]?.content ?? "");
    const firstUser = /User: (.{0,80})/.exec(text)?.[1] ?? "";
    return { content: JSON.stringify({ summary: `Talked about: ${firstUser}`, facts: [] }), toolCalls: [] };
  },
};
const home = tempHome("pincer-bench-memory-");
const config = loadConfig({
  OPENAI_API_KEY: "bench",
  PINCER_HOME: home,
  PINCER_SANDBOX: "none",
  PINCER_TIMEZONE: "UTC",
  LOG_LEVEL: "silent",
});
const app = await createApp(config, { log: pino({ level: "silent" }), model });
const tokens = createTokenCounter();

const topics = [
  "the garden and the tomatoes that need water",
  "我们周末去公园散步，然后在湖边吃午饭",
  "planning the trip to Lisbon 🇵🇹✈️ with the kids",
  "明日の会議の資料を準備しなければなりません",
  "🎂🎉🥳 party ideas for the office",
];
function turn(i: number): StoredMessage[] {
  const at = Date.parse("2025-01-01T00:00:00Z") + i * 60 * 60 * 1000;
  const topic = topics[i % topics.length];
  const user: StoredMessage = {
    role: "user",
    content:
      i === 3
        ? "Remember: my sister Anna's birthday is on the fifth of March."
        : `Turn ${i}: let's talk about ${topic}. ${topic}`,
    createdAt: at,
  };
  const answer: StoredMessage = {
    role: "assistant",
    content: `About ${topic}: here is what I think. ${topic}`,
    createdAt: at,
  };
  if (i % 4 !== 0) return [user, answer];
  return [
    user,
    {
      role: "assistant",
      content: null,
      toolCalls: [{ id: `c${i}`, name: "exec", arguments: '{"command":"ls"}' }],
      createdAt: at,
    },
    { role: "tool", content: `notes-${i}.md\ntodo.md\n`.repeat(20), toolCallId: `c${i}`, createdAt: at },
    answer,
  ];
}

const fillStart = performance.now();
for (let i = 0; i < TURNS; i += BATCH) {
  for (let j = i; j < i + BATCH; j++) await app.store.conversations.append(SESSION, turn(j));
  app.consolidator.afterTurn(SESSION, undefined);
  await app.consolidator.idle();
}
const fillMs = performance.now() - fillStart;
const messages = sqliteOf(app).prepare("SELECT count(*) FROM messages").pluck().get() as number;
const entries = sqliteOf(app)
  .prepare("SELECT count(*) FROM memory_entries WHERE session_key = ?")
  .pluck()
  .get(SESSION) as number;

const inbound = userMessage("bench", "What did I tell you about my sister?");
const user = toChatMessage({ role: "user", content: inbound.text });
const deps = turnContextDeps(config, {
  conversations: app.store.conversations,
  memory: app.store.memory,
  tokens,
  toolSchemas: () => app.registry.toSchemas(),
});
const samples: number[] = [];
let prompt = 0;
let historyMessages = 0;
let systemTokens = 0;
for (let i = 0; i < 60; i++) {
  const start = performance.now();
  const context = await buildTurnContext(deps, inbound, user);
  samples.push(performance.now() - start);
  const request = [{ role: "system" as const, content: context.system }, ...context.history, context.user];
  prompt = tokens.request(request, app.registry.toSchemas());
  historyMessages = context.history.length;
  systemTokens = tokens.text(context.system);
}
const build = summary(samples.slice(10));

// memory_search in the bench chat (SESSION is its session key).
const ctx = toolContext("bench", config.workspace);
const searchSamples: number[] = [];
let found = "";
for (let i = 0; i < 30; i++) {
  const start = performance.now();
  found = await app.registry.execute("memory_search", JSON.stringify({ query: "sister Anna birthday", limit: 3 }), ctx);
  searchSamples.push(performance.now() - start);
}
const search = summary(searchSamples.slice(5));
const cjkStart = performance.now();
const cjk = await app.registry.execute("memory_search", JSON.stringify({ query: "湖边午饭", limit: 3 }), ctx);
const cjkMs = performance.now() - cjkStart;

console.log(
  `${TURNS.toLocaleString("en-US")} turns (${messages.toLocaleString("en-US")} messages) stored and consolidated in ${(fillMs / 1000).toFixed(1)} s: ` +
    `${entries} dated entries from ${summaries} summaries; database ${(statSync(databasePath(home)).size / 1024 / 1024).toFixed(1)} MB`,
);
console.log(
  `prompt: ${prompt.toLocaleString("en-US")} tokens of a ${config.agent.contextTokens.toLocaleString("en-US")}-token budget ` +
    `(system with summaries ${systemTokens.toLocaleString("en-US")}, ${historyMessages} history messages)`,
);
console.log(`context build: median ${ms(build.median)}, p90 ${ms(build.p90)}`);
console.log(`memory_search "sister Anna birthday": median ${ms(search.median)}, p90 ${ms(search.p90)}`);
console.log(`  best hit: ${found.split("\n\n")[0]}`);
console.log(`memory_search "湖边午饭" (bigram fallback): ${ms(cjkMs)}; ${cjk.split("\n\n").length} hits`);
await app.stop();
