import type { Config } from "../config/config.js";
import type { ChatMessage } from "../llm/model.js";
import type { TokenCounter } from "../llm/tokens.js";
import { safeSlice } from "../text.js";
import type { ToolRegistry } from "../tools/registry.js";

/** The request cannot be made to fit: even the instructions and the user's message are too long. */
export class BudgetError extends Error {
  constructor(
    message: string,
    /** What the request still costs with everything that can go gone, by our count. */
    readonly needed: number,
    readonly budget: number,
  ) {
    super(message);
  }
}

/** Room kept for the model's answer (and sent as its `max_tokens`): a quarter of the window, at most 4,096 tokens. */
export function answerReserve(contextTokens: number): number {
  return Math.min(4096, Math.floor(contextTokens / 4));
}

export function requestBudget(contextTokens: number): number {
  return contextTokens - answerReserve(contextTokens);
}

interface FitInput {
  /** `[system, ...history, user, ...this turn's rounds]`, the user's message that started the turn at `userIndex`. */
  messages: ChatMessage[];
  userIndex: number;
  tools?: readonly object[];
  counter: TokenCounter;
  /** The most the request may cost, in tokens (the answer's reserve already taken off). */
  budget: number;
  /** Raw token counts of messages already seen (a turn resends the same objects every round). */
  cache?: WeakMap<ChatMessage, number>;
}

/** What a tool result of this turn is cut to first, when the request would not fit. */
const SHORT_RESULT_CHARS = 1000;

/** Makes a request fit the budget without breaking its structure (a tool call keeps its result). In order, until it
 * fits: shorten this turn's tool results, oldest first; drop history, oldest turn first; replace this turn's tool
 * results by a stub, oldest first; cut the user's message. Returns a new array; the caller's messages are untouched. */
export function fitRequest({ messages, userIndex, tools, counter, budget, cache }: FitInput) {
  const out = [...messages];
  const cost = (m: ChatMessage) => {
    let raw = cache?.get(m);
    if (raw === undefined) {
      raw = counter.rawMessage(m);
      cache?.set(m, raw);
    }
    return Math.ceil(raw * counter.factor);
  };
  const costs = out.map(cost);
  let total = 3 + (tools ? counter.tools(tools) : 0) + costs.reduce((a, b) => a + b, 0);
  const fits = () => total <= budget;
  const fitted = () => ({ messages: out, tokens: total });
  if (fits()) return fitted();
  const replace = (i: number, content: string) => {
    total -= costs[i];
    out[i] = { ...out[i], content } as ChatMessage;
    costs[i] = cost(out[i]);
    total += costs[i];
  };
  let user = userIndex;
  const toolIndexes = () => out.map((m, i) => (i > user && m.role === "tool" ? i : -1)).filter((i) => i >= 0);

  for (const i of toolIndexes()) {
    if (fits()) return fitted();
    const content = String(out[i].content ?? "");
    if (content.length > SHORT_RESULT_CHARS) replace(i, shorten(content, SHORT_RESULT_CHARS));
  }
  // History goes a whole turn at a time, so no tool result loses its call.
  while (!fits() && user > 1) {
    let end = 2;
    while (end < user && out[end].role !== "user") end++;
    out.splice(1, end - 1);
    total -= costs.splice(1, end - 1).reduce((a, b) => a + b, 0);
    user -= end - 1;
  }
  for (const i of toolIndexes()) {
    if (fits()) return fitted();
    replace(i, "[result dropped to fit the context budget; run the call again if you still need it]");
  }
  const content = out[user].content;
  // A message with image parts is not cut (its pictures would go); BudgetError below if it must be.
  if (!fits() && typeof content === "string") {
    const userCost = costs[user];
    // Keep the share of the message that fits, then halve until it does (counts are not linear).
    let keep = Math.floor((content.length * Math.max(0, userCost - (total - budget))) / Math.max(1, userCost));
    for (;;) {
      replace(user, shorten(content, keep));
      if (fits() || keep === 0) break;
      keep = Math.floor(keep / 2);
    }
  }
  if (fits()) return fitted();
  throw new BudgetError(
    `the instructions alone (${total} tokens) are more than the context budget of ${budget} tokens allows; shorten the workspace files or raise agent.contextTokens`,
    total,
    budget,
  );
}

export function shorten(text: string, chars: number): string {
  if (text.length <= chars) return text;
  return `${safeSlice(text, 0, chars)}\n… [${(text.length - chars).toLocaleString("en-US")} more characters cut to fit the context budget]`;
}

/** The one sentence a user gets when even the fixed prompt is more than the context allows: how much is missing, what
 * limits the window (`configured`: agent.contextTokens, or the model server), and the four costliest tools. */
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

export function tooSmallFor(
  err: BudgetError,
  deps: { registry: ToolRegistry; tokens: TokenCounter; window: () => number; config: Pick<Config, "agent"> },
): string {
  return tooSmallSentence({
    window: deps.window(),
    configured: deps.config.agent.contextTokens,
    needed: err.needed,
    tools: deps.registry
      .toSchemas()
      .map((schema) => ({ name: schema.function.name, tokens: deps.tokens.tools([schema]) })),
  });
}
