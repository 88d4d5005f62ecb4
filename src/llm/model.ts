import type OpenAI from "openai";
import { boundedCall } from "./bounded-call.js";
import { collectStream, fromCompletion } from "./collect.js";
import { ModelError, shorten, toModelError } from "./model-error.js";
import { normalizeReply } from "./reply.js";
import { defaultRequestOptions, withoutRefused } from "./request-options.js";

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
  /** Tokens the endpoint counted, when it says (plain completions do; streams when asked); `cachedTokens` are part of the prompt's. */
  usage?: { promptTokens: number; completionTokens: number; cachedTokens?: number };
  /** The configured name of the model that answered (a fallback's, when it did). */
  model?: string;
  /**
   * Why the reply ended, as the server said: "stop", "tool_calls", or "length" (cut at
   * `maxTokens` or the context: its text is incomplete and its tool calls may be half-written).
   * Absent when the server did not say.
   */
  finishReason?: string;
  /** Tool calls the reply's normalising threw away (no name, not an offered tool), in words for the model. */
  discarded?: string[];
}

export interface ModelRequest {
  messages: ChatMessage[];
  tools?: ToolSchema[];
  signal?: AbortSignal;
  /** The most tokens the answer may take (sent as `max_tokens`); unlimited when absent. */
  maxTokens?: number;
  /** Called with the reply's raw text so far each time a streamed reply's text grows (never for a plain one). */
  onText?: (textSoFar: string) => void;
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

/**
 * An OpenAI-compatible chat-completions model; streaming is optional because some servers only
 * do one. Replies come back normalised (see reply.ts), whatever shape the server sent.
 */
export function createOpenAIModel(options: ModelOptions): Model {
  let made: { OpenAI: typeof OpenAI; client: OpenAI } | undefined;
  // What this endpoint accepts, learned from its refusals.
  let accepted = defaultRequestOptions();
  const bounds = { timeoutMs: options.timeoutSeconds * 1000, retries: options.retries, who: "the model" };
  // Retries and the deadline are boundedCall's: the client's own would retry a request the
  // endpoint refuses for good, and its timeout ends with the headers.
  const model: Model = {
    complete: (request) => boundedCall(bounds, request.signal, (signal) => once.complete({ ...request, signal })),
  };
  const once: Model = {
    async complete({ messages, tools, signal, maxTokens, onText }) {
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
      const offered = tools && tools.length > 0 ? tools : undefined;
      // A reply shown as it is written needs the stream, whatever agent.stream says for the rest.
      const streaming = options.stream || onText !== undefined;
      try {
        for (;;) {
          const sent = accepted;
          const body = {
            model: options.model,
            temperature: options.temperature,
            messages,
            ...(offered ? { tools: offered, tool_choice: "auto" as const } : {}),
            ...(maxTokens !== undefined && sent.lengthField ? { [sent.lengthField]: maxTokens } : {}),
          };
          try {
            const collected = streaming
              ? await collectStream(
                  await client.chat.completions.create(
                    {
                      ...body,
                      stream: true,
                      ...(sent.streamUsage ? { stream_options: { include_usage: true } } : {}),
                    },
                    { signal },
                  ),
                  onText,
                )
              : fromCompletion(await client.chat.completions.create(body, { signal }));
            if (!collected) throw new ModelError("the model returned no choices");
            const names = (offered ?? []).map((tool) => tool.function.name);
            return { ...normalizeReply(collected.raw, names), usage: collected.usage, model: options.model };
          } catch (err) {
            // A field this endpoint does not know: asked again at once without it, and never sent again.
            const refused = err instanceof OpenAI.APIError && (err.status === 400 || err.status === 422);
            const retry = refused && withoutRefused(sent, err.message, streaming);
            if (!retry) throw err;
            accepted = retry;
          }
        }
      } catch (err) {
        throw toModelError(err, OpenAI, options, signal);
      }
    },
  };
  return model;
}
