// What model servers say about their context window: llama-server's `/props`, `/v1/models` metadata (vLLM,
// OpenRouter, LM Studio), and the words of a refusal.

/** A refusal as too long, in the server's tokens; `promptTokens` (what our request cost) calibrates our counter. */
export type ContextRefusal = { contextTokens?: number; promptTokens?: number };

/** A refusal's numbers in each server's words; the first pattern that matches wins. */
const WINDOW_PATTERNS = [
  /available context size \((\d+) tokens\)/i, // llama.cpp
  /maximum context length is (\d+) tokens/i, // vLLM, OpenAI, OpenRouter
  /context length of only (\d+) tokens/i, // LM Studio
  /context (?:window|length|size) (?:is|of) (\d+) tokens/i,
];
const PROMPT_PATTERNS = [
  /request \((\d+) tokens\) exceeds/i, // llama.cpp
  /\((\d+) in the messages/i, // vLLM, OpenAI
  /messages resulted in (\d+) tokens/i, // OpenAI
  /(?:request has|prompt contains at least) (\d+) input tokens/i, // newer vLLM
];
/** A context refusal that gives no numbers (older llama.cpp, some proxies). */
const REFUSAL_WORDS =
  /exceeds? the (?:available )?context|context[_ ]length[_ ]exceeded|maximum context length|context (?:window|length) (?:exceeded|is too small)|exceed_context_size/i;

/** Reads a refusal from the error's text and its `error` object (llama.cpp puts `n_ctx` and `n_prompt_tokens` there). */
export function readContextRefusal(message: string, body?: unknown): ContextRefusal | undefined {
  const fields = isRecord(body) ? body : {};
  const type = `${String(fields.type ?? "")} ${String(fields.code ?? "")}`;
  const contextTokens = positive(fields.n_ctx) ?? firstNumber(message, WINDOW_PATTERNS);
  const promptTokens = positive(fields.n_prompt_tokens) ?? firstNumber(message, PROMPT_PATTERNS);
  if (contextTokens === undefined && !REFUSAL_WORDS.test(`${message} ${type}`)) return undefined;
  return { contextTokens, promptTokens };
}

/** llama-server's `GET /props`: the context of one slot (`default_generation_settings.n_ctx`), else `n_ctx`. */
export function contextFromProps(body: unknown): number | undefined {
  if (!isRecord(body)) return undefined;
  const settings = isRecord(body.default_generation_settings) ? body.default_generation_settings : {};
  return positive(settings.n_ctx) ?? positive(body.n_ctx);
}

/** `GET /v1/models`: the context the entry of `model` (or the only entry) declares: vLLM's `max_model_len`, LM
 * Studio's `loaded_context_length` (loaded now) before its `max_context_length`, OpenRouter's `context_length`, its
 * provider's. */
export function contextFromModels(body: unknown, model: string): number | undefined {
  const data = isRecord(body) && Array.isArray(body.data) ? body.data.filter(isRecord) : [];
  const entry = data.find((e) => e.id === model) ?? (data.length === 1 ? data[0] : undefined);
  if (!entry) return undefined;
  const provider = isRecord(entry.top_provider) ? entry.top_provider : {};
  return (
    positive(entry.max_model_len) ??
    positive(entry.loaded_context_length) ??
    positive(entry.context_length) ??
    positive(entry.max_context_length) ??
    positive(provider.context_length)
  );
}

function firstNumber(text: string, patterns: RegExp[]): number | undefined {
  for (const pattern of patterns) {
    const found = positive(Number(pattern.exec(text)?.[1]));
    if (found !== undefined) return found;
  }
  return undefined;
}

function positive(value: unknown): number | undefined {
  const n = typeof value === "string" && /^\d+$/.test(value) ? Number(value) : value;
  return typeof n === "number" && Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
