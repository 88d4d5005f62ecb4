import { type RawReply, type ToolCall, textOf, withoutReasoning } from "./reply.js";

export type Usage = { promptTokens: number; completionTokens: number; cachedTokens?: number };

export type Collected = { raw: RawReply; usage?: Usage };
type RawFunction = { name?: unknown; arguments?: unknown };
type Part = { content?: unknown; tool_calls?: unknown };
/** A choice of a chunk (`delta`) or of a plain completion (`message`), shapes unchecked. */
type Choice = { delta?: Part; message?: Part; finish_reason?: unknown };

/** Glues a streamed reply back together, tolerating what servers really send: tool-call pieces keyed by `index`, by
 * `id` alone, or by neither (then they continue the last call); a name sent again with every piece; arguments as an
 * object; no `choices` on a usage chunk; the finish reason anywhere, or nowhere. Reasoning deltas are left out. */
export async function collectStream(chunks: AsyncIterable<unknown>, onText?: (textSoFar: string) => void) {
  let content = "";
  const calls: ToolCall[] = [];
  const byIndex = new Map<number, ToolCall>();
  let finishReason: unknown;
  let usage: Usage | undefined;
  let chose = false;
  for await (const chunk of chunks) {
    const { choices, usage: reported, timings } = (chunk ?? {}) as Record<string, unknown>;
    usage = usageOf(reported, timings) ?? usage;
    const choice = (Array.isArray(choices) ? choices[0] : undefined) as Choice | undefined;
    chose ||= choice !== undefined;
    if (choice?.finish_reason) finishReason = choice.finish_reason;
    const delta = choice?.delta;
    if (!delta) continue;
    const text = textOf(delta.content);
    if (text) {
      content += text;
      onText?.(content);
    }
    for (const piece of Array.isArray(delta.tool_calls) ? delta.tool_calls : []) {
      const { index, id, function: fn } = (piece ?? {}) as { index?: unknown; id?: unknown; function?: RawFunction };
      const givenId = typeof id === "string" && id !== "" ? id : undefined;
      let call = findCall(calls, byIndex, typeof index === "number" ? index : undefined, givenId);
      if (!call) {
        call = { id: "", name: "", arguments: "" };
        calls.push(call);
        if (typeof index === "number") byIndex.set(index, call);
      }
      call.id ||= givenId ?? "";
      const name = typeof fn?.name === "string" ? fn.name : "";
      if (name !== call.name) call.name += name;
      const args = fn?.arguments;
      if (typeof args === "string") call.arguments += args;
      else if (args !== undefined && args !== null) call.arguments = JSON.stringify(args);
    }
  }
  // No choice at all is no answer (as a plain reply's `choices: []`), not an empty one the user never sees.
  return chose ? { raw: { content, toolCalls: calls, finishReason }, usage } : undefined;
}

/** The call a piece continues: the one at its index, unless the piece brings another id (servers that number every
 * call 0); without an index, the one with its id; without either, the last. */
function findCall(calls: ToolCall[], byIndex: Map<number, ToolCall>, index?: number, id?: string) {
  const last = calls.at(-1);
  if (index !== undefined) {
    const call = byIndex.get(index);
    return call && id && call.id && call.id !== id ? undefined : call;
  }
  if (!id) return last;
  return calls.find((c) => c.id === id) ?? (last && last.id === "" ? last : undefined);
}

/** A plain completion, read without trusting its shape. */
export function fromCompletion(response: unknown): Collected | undefined {
  const { choices, usage, timings } = (response ?? {}) as Record<string, unknown>;
  const choice = (Array.isArray(choices) ? choices[0] : undefined) as Choice | undefined;
  const message = choice?.message;
  if (!message) return undefined;
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
  const toolCalls = calls.map((call) => {
    const { id, function: fn } = (call ?? {}) as { id?: unknown; function?: RawFunction };
    return { id, name: fn?.name, arguments: fn?.arguments };
  });
  return {
    raw: { content: message.content, toolCalls, finishReason: choice.finish_reason },
    usage: usageOf(usage, timings),
  };
}

/** A count past 100 million tokens (more than any request or answer has) is a server's mistake. */
function count(value: unknown): number | undefined {
  return typeof value === "number" && Number.isInteger(value) && value >= 0 && value <= 100_000_000 ? value : undefined;
}

/** Believable token counts from a `usage` object (else pincer counts), with the prompt's share the server's cache
 * served where it says (0 included): `prompt_tokens_details.cached_tokens` (OpenAI, vLLM, llama-server), Anthropic's
 * `cache_read_input_tokens`, llama-server's `timings.cache_n` beside `usage`; at most the prompt's tokens. */
export function usageOf(usage: unknown, timings?: unknown): Usage | undefined {
  const given = (usage ?? {}) as Record<string, unknown>;
  const promptTokens = count(given.prompt_tokens);
  const completionTokens = given.completion_tokens === undefined ? 0 : count(given.completion_tokens);
  if (promptTokens === undefined || completionTokens === undefined) return undefined;
  const cached =
    count((given.prompt_tokens_details as { cached_tokens?: unknown } | null)?.cached_tokens) ??
    count(given.cache_read_input_tokens) ??
    count((timings as { cache_n?: unknown } | null)?.cache_n);
  return {
    promptTokens,
    completionTokens,
    ...(cached === undefined ? {} : { cachedTokens: Math.min(cached, promptTokens) }),
  };
}

/** What of a streamed reply's raw text may be shown yet: no reasoning (an unclosed `<think>` hides the rest), nothing
 * from tool-call markup on or while it could be a bare JSON call, no half-written tag at the end. */
export function visibleSoFar(raw: string): string {
  let text = withoutReasoning(raw);
  for (const marker of ["<think>", "<tool_call>", "[TOOL_CALLS]"]) {
    const at = text.indexOf(marker);
    if (at >= 0) text = text.slice(0, at);
  }
  if (/^[[{]/.test(text)) return "";
  return text.replace(/(?:<[\w/]*|\[[A-Z_]*)$/, "").trimEnd();
}
