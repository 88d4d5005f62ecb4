import type { TokenCounter } from "../llm/tokens.js";
import type { ToolRegistry } from "../tools/registry.js";
import type { BudgetError } from "./budget.js";

export interface TooSmallFacts {
  /** The context window the turn had, in tokens. */
  window: number;
  /** agent.contextTokens. */
  configured: number;
  /** What the request needs with everything that can go gone (instructions, tools, the message). */
  needed: number;
  /** The offered tools and what each one's schema costs, in tokens. */
  tools: Array<{ name: string; tokens: number }>;
}

/** Tools named as the ones to turn off first. */
const NAMED_TOOLS = 4;

/**
 * The one sentence a user gets when even the fixed prompt (instructions, tool schemas and their
 * message) is more than the context allows: how much is missing, what limits the window
 * (agent.contextTokens or the model server), and which tools cost the most.
 */
export function tooSmallSentence({ window, configured, needed, tools }: TooSmallFacts): string {
  const n = (x: number) => x.toLocaleString("en-US");
  const limit =
    window < configured
      ? `the model server takes only ${n(window)} tokens (agent.contextTokens is ${n(configured)}), so start it with a larger context`
      : `agent.contextTokens is ${n(configured)}, so raise it if the model takes more`;
  const biggest = [...tools].sort((a, b) => b.tokens - a.tokens).slice(0, NAMED_TOOLS);
  const off =
    biggest.length > 0
      ? `, or turn off tools in agent.disabledTools, the biggest being ${biggest.map((t) => `${t.name} (${n(t.tokens)})`).join(", ")}`
      : "";
  return `I cannot answer: my instructions, tools and your message need about ${n(needed)} tokens and leave too little room for a reply in this model's context: ${limit}${off}.`;
}

/** The sentence for a turn whose request did not fit: the window now, and what each offered tool costs. */
export function tooSmallFor(
  err: BudgetError,
  deps: { registry: ToolRegistry; tokens: TokenCounter; window: () => number; settings: { contextTokens: number } },
): string {
  return tooSmallSentence({
    window: deps.window(),
    configured: deps.settings.contextTokens,
    needed: err.needed,
    tools: deps.registry
      .toSchemas()
      .map((schema) => ({ name: schema.function.name, tokens: deps.tokens.tools([schema]) })),
  });
}
