import type { Config } from "../config/config.js";
import type { TokenCounter } from "../llm/tokens.js";
import type { ToolRegistry } from "../tools/registry.js";
import type { BudgetError } from "./context-budget.js";

/** The one sentence a user gets when even the fixed prompt (instructions, tool schemas, their message) is more than the
 * context allows: how much is missing, what limits the window (agent.contextTokens or the model server), and the four
 * costliest tools. `window`: the turn's; `configured`: agent.contextTokens. */
export function tooSmallSentence(facts: {
  window: number;
  configured: number;
  needed: number;
  tools: Array<{ name: string; tokens: number }>;
}): string {
  const { window, configured, needed, tools } = facts;
  const n = (x: number) => x.toLocaleString("en-US");
  const limit =
    window < configured
      ? `the model server takes only ${n(window)} tokens (agent.contextTokens is ${n(configured)}), so start it with a larger context`
      : `agent.contextTokens is ${n(configured)}, so raise it if the model takes more`;
  const biggest = [...tools].sort((a, b) => b.tokens - a.tokens).slice(0, 4);
  const off =
    biggest.length > 0
      ? `, or turn off tools in agent.disabledTools, the biggest being ${biggest.map((t) => `${t.name} (${n(t.tokens)})`).join(", ")}`
      : "";
  return `I cannot answer: my instructions, tools and your message need about ${n(needed)} tokens and leave too little room for a reply in this model's context: ${limit}${off}.`;
}

/** The sentence for a turn whose request did not fit: the window now, and what each offered tool costs. */
export function tooSmallFor(
  err: BudgetError,
  deps: { registry: ToolRegistry; tokens: TokenCounter; window: () => number; config: Pick<Config, "agent"> },
): string {
  const tools = deps.registry
    .toSchemas()
    .map((schema) => ({ name: schema.function.name, tokens: deps.tokens.tools([schema]) }));
  return tooSmallSentence({
    window: deps.window(),
    configured: deps.config.agent.contextTokens,
    needed: err.needed,
    tools,
  });
}
