import type OpenAI from "openai";
import { boundedCall } from "./bounded-call.js";
import { ModelError, shorten, toModelError } from "./model-error.js";

export { ContextRefusedError, ModelError, notFoundHint } from "./model-error.js";

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
  const bounds = { timeoutMs: options.timeoutSeconds * 1000, retries: options.retries, who: "the model" };
  // Retries and the deadline are boundedCall's: the client's own would retry a request the
  // endpoint refuses for good, and its timeout ends with the headers.
  const model: Model = {
    complete: (request) => boundedCall(bounds, request.signal, (signal) => once.complete({ ...request, signal })),
  };
  const once: Model = {
    async complete({ messages, tools, signal }) {
      const OpenAIClass = await loadOpenAI();
      made ??= {
        OpenAI: OpenAIClass,
        client: new OpenAIClass({
          apiKey: options.apiKey,
          baseURL: options.baseUrl,
          timeout: options.timeoutSeconds * 1000,
          maxRetries: 0,
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
  return model;
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
