/**
 * Building one turn's context the way the worker does (`buildTurnContext`: the workspace's prompt
 * files, consolidated summaries, skills, the tools' schemas counted, the newest history that fits)
 * for a 100,000-message conversation, against a 10-message one and a 1,000-message one.
 * A conversation longer than the budget costs what the budget holds, so 1,000 messages shows how
 * much of the first ratio is length and how much is budget.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { toChatMessage } from "../src/agent/context.js";
import { buildTurnContext, ChatForms, type TurnContextDeps } from "../src/agent/turn-context.js";
import { type Config, loadConfig } from "../src/config/config.js";
import { createTokenCounter } from "../src/llm/tokens.js";
import { ensureHome } from "../src/setup/ensure-home.js";
import { openSqliteStore } from "../src/store/sqlite/sqlite-store.js";
import { createTools } from "../src/tools/index.js";
import { ToolRegistry } from "../src/tools/registry.js";
import { userMessage } from "../test/helpers/app.js";
import type { Figure } from "./figures.js";
import { summary } from "./stats.js";

export async function contextBuild(): Promise<Figure[]> {
  const home = mkdtempSync(join(tmpdir(), "pincer-bench-context-"));
  try {
    const config = loadConfig({ OPENAI_API_KEY: "bench", PINCER_HOME: home, LOG_LEVEL: "silent" });
    ensureHome(config);
    const tokens = createTokenCounter();
    const store = openSqliteStore(join(home, "pincer.db"), { countTokens: (m) => tokens.rawMessage(toChatMessage(m)) });
    const { conversations } = store;
    const registry = new ToolRegistry();
    for (const tool of createTools({ config, store })) registry.register(tool);
    const deps = turnContextDeps(config, {
      conversations,
      memory: store.memory,
      tokens,
      toolSchemas: () => registry.toSchemas(),
    });
    const filler = (n: number) =>
      Array.from({ length: n }, (_, i) => ({
        role: i % 2 === 0 ? ("user" as const) : ("assistant" as const),
        content: `message ${i} ${"lorem ipsum ".repeat(20)}`,
      }));
    await conversations.append("console:c10", filler(10));
    await conversations.append("console:c1000", filler(1000));
    for (let i = 0; i < 100; i++) await conversations.append("console:c100000", filler(1000));

    const cost = async (chatId: string) => {
      const samples: number[] = [];
      for (let i = 0; i < 200; i++) {
        const started = performance.now();
        const inbound = userMessage(chatId, "hi");
        await buildTurnContext(deps, inbound, { role: "user", content: inbound.text });
        samples.push(performance.now() - started);
      }
      return summary(samples).median;
    };
    for (const chat of ["c10", "c1000", "c100000"]) await cost(chat);
    const small = await cost("c10");
    const medium = await cost("c1000");
    const large = await cost("c100000");
    await store.close();
    return [
      {
        figure: "context build, 100,000-message conversation",
        pincer: fmt(large),
        baseline: `${fmt(small)} (10 messages)`,
        ratio: large / small,
        target: { max: 1.1 },
      },
      {
        figure: "context build, 100,000-message conversation, against one that just fills the budget",
        pincer: fmt(large),
        baseline: `${fmt(medium)} (1,000 messages)`,
        ratio: large / medium,
        target: { max: 1.1 },
      },
    ];
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

/** What the worker hands buildTurnContext, from the config (no skills). */
export function turnContextDeps(
  config: Config,
  parts: Pick<TurnContextDeps, "conversations" | "memory" | "tokens" | "toolSchemas">,
): TurnContextDeps {
  return {
    ...parts,
    skills: () => [],
    config,
    contextTokens: config.agent.contextTokens,
    // The bench's chats are console ones, whose owner sees MEMORY.md.
    ownerMemory: true,
    // As the worker keeps them: one set of history forms across turns.
    forms: new ChatForms(),
  };
}

const fmt = (ms: number) => `${ms.toFixed(2)} ms`;
