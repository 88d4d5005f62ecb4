import { readFileSync, renameSync, writeFileSync } from "node:fs";
import type { Logger } from "pino";
import { isRecord } from "./text-tool-calls.js";

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
  return patterns.map((pattern) => positive(Number(pattern.exec(text)?.[1]))).find((found) => found !== undefined);
}

function positive(value: unknown): number | undefined {
  const n = typeof value === "string" && /^\d+$/.test(value) ? Number(value) : value;
  return typeof n === "number" && Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

export type ContextSource = "props" | "models" | "refusal";

type Known = { tokens: number; source: ContextSource; at: string };

/** Endpoints remembered at most; the oldest goes first. */
const MAX_ENTRIES = 32;

/** The context windows of the endpoints pincer talks to, per `model at baseUrl`, kept in a small JSON file so a restart
 * knows them before the first turn. What a server says up front replaces what was known (it may have been restarted
 * with another `-c`); a refusal can only make the known window smaller. */
export class ContextLimits {
  private readonly known = new Map<string, Known>();

  constructor(
    private readonly file: string,
    private readonly log: Pick<Logger, "info" | "warn">,
  ) {
    try {
      const saved = JSON.parse(readFileSync(file, "utf8")) as Record<string, Known>;
      for (const [key, entry] of Object.entries(saved)) {
        if (Number.isSafeInteger(entry?.tokens) && entry.tokens > 0) this.known.set(key, entry);
      }
    } catch (err) {
      const { code, message } = err as NodeJS.ErrnoException;
      if (code !== "ENOENT") {
        log.warn({ file, err: message }, "the remembered context windows are unreadable; learning them again");
      }
    }
  }

  get(endpoint: string): number | undefined {
    return this.known.get(endpoint)?.tokens;
  }

  /** Forgets what a refusal taught (the server may have been restarted with more). */
  forgetRefusal(endpoint: string): void {
    if (this.known.get(endpoint)?.source !== "refusal") return;
    this.known.delete(endpoint);
    this.save();
  }

  learn(endpoint: string, tokens: number, source: ContextSource): void {
    const before = this.known.get(endpoint);
    if (source === "refusal" && before && before.tokens <= tokens) return;
    if (before?.tokens === tokens && before.source === source) return;
    this.known.delete(endpoint);
    this.known.set(endpoint, { tokens, source, at: new Date().toISOString() });
    while (this.known.size > MAX_ENTRIES) this.known.delete(this.known.keys().next().value as string);
    this.log.info(
      { endpoint, contextTokens: tokens, source, before: before?.tokens },
      "learned the model's context window",
    );
    this.save();
  }

  private save(): void {
    try {
      const temp = `${this.file}.${process.pid}.tmp`;
      writeFileSync(temp, `${JSON.stringify(Object.fromEntries(this.known), null, 2)}\n`, { mode: 0o600 });
      renameSync(temp, this.file);
    } catch (err) {
      this.log.warn({ file: this.file, err: (err as Error).message }, "could not remember the context windows");
    }
  }
}

/** The `/status` line: the window turns fit, and what limits it. */
export function contextLine(window: number, configured: number): string {
  const n = (x: number) => x.toLocaleString("en-US");
  return window < configured
    ? `Context: ${n(window)} tokens (the model server's; agent.contextTokens is ${n(configured)})`
    : `Context: ${n(window)} tokens (agent.contextTokens)`;
}

type DiscoverOptions = { baseUrl: string; apiKey: string; model: string; timeoutMs: number };

/** The endpoint's context from llama-server's `/props` (beside `/v1`), else the model's `/v1/models` entry; undefined
 * when neither says. Never throws: most servers say nothing. */
export async function discoverContext(
  options: DiscoverOptions,
): Promise<{ tokens: number; source: ContextSource } | undefined> {
  const base = options.baseUrl.replace(/\/+$/, "");
  const fromProps = contextFromProps(await getJson(`${base.replace(/\/v1$/, "")}/props`, options));
  if (fromProps) return { tokens: fromProps, source: "props" };
  const fromModels = contextFromModels(await getJson(`${base}/models`, options), options.model);
  return fromModels ? { tokens: fromModels, source: "models" } : undefined;
}

function getJson(url: string, { apiKey, timeoutMs }: DiscoverOptions): Promise<unknown> {
  const headers = { authorization: `Bearer ${apiKey}`, accept: "application/json" };
  return fetch(url, { headers, signal: AbortSignal.timeout(timeoutMs) })
    .then((response) => (response.ok ? response.json() : undefined))
    .catch(() => undefined);
}
