import type OpenAI from "openai";
import { type ContextRefusal, readContextRefusal } from "./context-window.js";

export type ChatMessage = OpenAI.Chat.Completions.ChatCompletionMessageParam;

/** The OpenAI function-calling shape of a tool, as the model is offered it. */
export interface ToolSchema {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

export interface ToolCall {
  id: string;
  name: string;
  arguments: string;
}

export interface ModelReply {
  content: string;
  toolCalls: ToolCall[];
  /** Tokens the endpoint counted, when it says (plain completions do; streams usually not). */
  usage?: { promptTokens: number; completionTokens: number };
}

export interface ModelRequest {
  messages: ChatMessage[];
  tools?: ToolSchema[];
  signal?: AbortSignal;
}

/** The one thing the agent needs from a model endpoint. */
export interface Model {
  complete(request: ModelRequest): Promise<ModelReply>;
}

/**
 * The model endpoint failed (HTTP error, timeout, refused key); `message` is fit for the user.
 * `permanent` failures (a refused key, a wrong URL or model name) will not heal by waiting.
 */
export class ModelError extends Error {
  constructor(
    message: string,
    readonly permanent = false,
    /** The endpoint's HTTP status, when it answered at all. */
    readonly status?: number,
  ) {
    super(message);
  }
}

/**
 * The endpoint refused the request as too long for its context, and said what it could (see
 * context-window.ts). Permanent: the same request would be refused again, whatever its status
 * (older llama.cpp answers 500), so no fallback or circuit breaker takes it for an outage.
 */
export class ContextRefusedError extends ModelError {
  constructor(
    message: string,
    readonly refusal: ContextRefusal,
    status?: number,
  ) {
    super(message, true, status);
  }
}

export interface ModelOptions {
  apiKey: string;
  baseUrl: string;
  model: string;
  timeoutSeconds: number;
  retries: number;
  stream: boolean;
  temperature?: number;
}

/**
 * The openai package (~10 MB, ~70 ms to load), imported by the first request rather than at start,
 * so the channels connect without waiting for it; the gateway's model probe right after start
 * usually loads it before the first turn. A broken install is a permanent ModelError.
 */
export async function loadOpenAI(): Promise<typeof OpenAI> {
  try {
    return (await import("openai")).default;
  } catch (err) {
    throw new ModelError(
      `the model client could not be loaded (${shorten((err as Error).message)}); reinstall pincer's dependencies (npm ci)`,
      true,
    );
  }
}

/** An OpenAI-compatible chat-completions model; streaming is optional because some servers only do one. */
export function createOpenAIModel(options: ModelOptions): Model {
  let made: { OpenAI: typeof OpenAI; client: OpenAI } | undefined;
  const base = { model: options.model, temperature: options.temperature };

  return {
    async complete({ messages, tools, signal }) {
      const OpenAIClass = await loadOpenAI();
      made ??= {
        OpenAI: OpenAIClass,
        client: new OpenAIClass({
          apiKey: options.apiKey,
          baseURL: options.baseUrl,
          timeout: options.timeoutSeconds * 1000,
          maxRetries: options.retries,
        }),
      };
      const { client, OpenAI } = made;
      const withTools = tools && tools.length > 0 ? { tools, tool_choice: "auto" as const } : {};
      try {
        if (!options.stream) {
          const response = await client.chat.completions.create({ ...base, messages, ...withTools }, { signal });
          const message = response.choices[0]?.message;
          if (!message) throw new ModelError("the model returned no choices");
          return {
            content: message.content ?? "",
            toolCalls: (message.tool_calls ?? []).flatMap((call) =>
              call.type === "function"
                ? [{ id: call.id, name: call.function.name, arguments: call.function.arguments }]
                : [],
            ),
            usage: response.usage && {
              promptTokens: response.usage.prompt_tokens,
              completionTokens: response.usage.completion_tokens,
            },
          };
        }
        const stream = await client.chat.completions.create(
          { ...base, messages, ...withTools, stream: true },
          { signal },
        );
        return await collectStream(stream);
      } catch (err) {
        throw toModelError(err, OpenAI, options, signal);
      }
    },
  };
}

/** Streamed tool calls arrive in pieces keyed by index; glue them back together. */
async function collectStream(stream: AsyncIterable<OpenAI.Chat.Completions.ChatCompletionChunk>): Promise<ModelReply> {
  let content = "";
  const calls: ToolCall[] = [];
  let usage: ModelReply["usage"];
  for await (const chunk of stream) {
    // Servers that report usage in a stream send it on a last chunk without choices.
    if (chunk.usage)
      usage = { promptTokens: chunk.usage.prompt_tokens, completionTokens: chunk.usage.completion_tokens };
    const delta = chunk.choices[0]?.delta;
    if (!delta) continue;
    content += delta.content ?? "";
    for (const piece of delta.tool_calls ?? []) {
      calls[piece.index] ??= { id: "", name: "", arguments: "" };
      const call = calls[piece.index];
      call.id ||= piece.id ?? "";
      call.name += piece.function?.name ?? "";
      call.arguments += piece.function?.arguments ?? "";
    }
  }
  return { content, toolCalls: calls.filter(Boolean), usage };
}

function toModelError(
  err: unknown,
  OpenAI: typeof import("openai").default,
  options: Pick<ModelOptions, "baseUrl" | "model">,
  signal?: AbortSignal,
): Error {
  if (err instanceof ModelError) return err;
  if (signal?.aborted) return signal.reason instanceof Error ? signal.reason : new Error("aborted");
  if (err instanceof OpenAI.APIConnectionTimeoutError) return new ModelError("the model did not answer in time");
  if (err instanceof OpenAI.APIConnectionError) return new ModelError("the model endpoint could not be reached");
  if (err instanceof OpenAI.AuthenticationError) {
    return new ModelError("the model endpoint refused the API key (401): check OPENAI_API_KEY", true);
  }
  if (err instanceof OpenAI.NotFoundError) return new ModelError(notFoundHint(options), true);
  if (err instanceof OpenAI.RateLimitError)
    return new ModelError("the model endpoint is rate-limiting us (429)", false, 429);
  if (err instanceof OpenAI.APIError) {
    const message = `the model endpoint answered ${err.status ?? "with an error"}: ${shorten(err.message)}`;
    const refusal = readContextRefusal(err.message, err.error);
    if (refusal) return new ContextRefusedError(message, refusal, err.status);
    return new ModelError(message, false, err.status);
  }
  return new ModelError(`the model call failed: ${shorten((err as Error)?.message ?? String(err))}`);
}

/** A 404 is nearly always a base URL without its `/v1` or a model name the endpoint does not serve. */
export function notFoundHint({ baseUrl, model }: Pick<ModelOptions, "baseUrl" | "model">): string {
  const path = new URL(baseUrl).pathname.replace(/\/+$/, "");
  const url =
    path === ""
      ? `OPENAI_BASE_URL ${baseUrl} has no path; most endpoints want ${baseUrl}/v1`
      : `check OPENAI_BASE_URL (${baseUrl})`;
  return `the model endpoint answered 404 (not found): ${url}, and that PINCER_MODEL "${model}" is a model it serves`;
}

function shorten(text: string): string {
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}
