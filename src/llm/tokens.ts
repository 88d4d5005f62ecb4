import { estimateTokens } from "./estimate-tokens.js";
import type { ChatMessage } from "./model.js";
import { textOf } from "./reply.js";

export type TokenCounter = ReturnType<typeof createTokenCounter>;

/** Framing (role, separators) of each message beyond its text. */
const MESSAGE_OVERHEAD = 4;
const MAX_FACTOR = 4;
const IMPLAUSIBLE_FACTOR = 2 * MAX_FACTOR;
/** The system prompt is counted again in each round of a turn: remember a few long texts. */
const MEMO_MIN_CHARS = 2000;
const MEMO_ENTRIES = 16;
/** An image part, not decoded: OpenAI charges 765 for a 1024×1024 picture (pincer downscales to that). */
const IMAGE_TOKENS = 800;

/** What a request will cost at the endpoint: `estimateTokens` (close to o200k_base) times a factor learned from the
 * `usage` it reports, which also covers other tokenizers. Every count is calibrated but `rawMessage` (what the store
 * keeps; scale it by `factor`). */
export function createTokenCounter() {
  let factor = 1;
  const memo = new Map<string, number>();
  const raw = (text: string): number => {
    if (text.length < MEMO_MIN_CHARS) return estimateTokens(text);
    const known = memo.get(text);
    if (known !== undefined) return known;
    const counted = estimateTokens(text);
    if (memo.size >= MEMO_ENTRIES) memo.delete(memo.keys().next().value as string);
    memo.set(text, counted);
    return counted;
  };
  // The registry hands out the same schema objects until a tool changes: never serialised to count them again.
  const schemaTokens = new WeakMap<object, number>();
  const schemaCost = (schema: object): number => {
    const counted = schemaTokens.get(schema) ?? estimateTokens(JSON.stringify(schema));
    schemaTokens.set(schema, counted);
    return counted;
  };
  const rawTools = (schemas: readonly object[]) => schemas.reduce((n, schema) => n + schemaCost(schema), 0);
  const rawMessage = (message: ChatMessage): number => {
    let tokens = MESSAGE_OVERHEAD + raw(textOf(message.content)) + IMAGE_TOKENS * imageCount(message.content);
    for (const call of (message.role === "assistant" && message.tool_calls) || []) {
      if (call.type === "function") tokens += MESSAGE_OVERHEAD + raw(call.function.name) + raw(call.function.arguments);
    }
    if (message.role === "tool") tokens += raw(message.tool_call_id);
    return tokens;
  };
  const scale = (tokens: number) => Math.ceil(tokens * factor);

  return {
    text: (text: string) => scale(raw(text)),
    rawMessage,
    tools: (schemas: readonly object[]) => scale(rawTools(schemas)),
    request: (messages: ChatMessage[], tools: readonly object[] = []) =>
      scale(messages.reduce((n, m) => n + rawMessage(m), 3) + rawTools(tools)),
    /** Feeds back what the endpoint said a request cost (`usage.prompt_tokens`). */
    calibrate(counted: number, reported: number): void {
      // `counted` is already scaled; recover the raw count so the factor does not compound.
      const rawCounted = counted / factor;
      if (!(rawCounted > 200) || !(reported > 0)) return;
      // No tokenizer splits text that differently: such a count is the server's bug (a running total, another
      // request's). Believed, it would make the instructions alone too big and no request would go out to correct it.
      if (reported / rawCounted > IMPLAUSIBLE_FACTOR) return;
      const observed = Math.min(MAX_FACTOR, Math.max(1, reported / rawCounted));
      // Rise at once (never send more than the endpoint allows), fall back slowly.
      factor = observed >= factor ? observed : factor * 0.8 + observed * 0.2;
    },
    get factor(): number {
      return factor;
    },
  };
}

function imageCount(content: ChatMessage["content"]): number {
  return Array.isArray(content) ? content.filter((part) => part.type === "image_url").length : 0;
}
