import type OpenAI from "openai";
import { boundedCall } from "./bounded-call.js";
import { type Collected, collectStream, fromCompletion, type Usage } from "./collect.js";
import { ModelError, shorten, toModelError } from "./failure.js";
import { closesThinkingAlone, type NormalizedReply, normalizeReply, textOf } from "./reply.js";
import { inputsCarryCalls } from "./text-tool-calls.js";

export { ContextRefusedError, ModelError, notFoundHint } from "./failure.js";

export type ChatMessage = OpenAI.Chat.Completions.ChatCompletionMessageParam;

export interface ToolSchema {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/** `usage`: what the endpoint counted, when it says; `model`: the configured name that answered (a fallback's). */
export type ModelReply = NormalizedReply & { usage?: Usage; model?: string };

export interface ModelRequest {
  messages: ChatMessage[];
  tools?: ToolSchema[];
  signal?: AbortSignal;
  /** The most tokens the answer may take; unlimited when absent. */
  maxTokens?: number;
  /** Hears a streamed reply's raw text so far each time it grows (never a plain one's), once it cannot turn out to be
   * reasoning: from an endpoint whose chat template opens `<think>` itself, or one not yet seen answering in text,
   * only from its `</think>` on. */
  onText?: (textSoFar: string) => void;
  /** The conversation asking: the circuit breaker counts its requests' failures the endpoint answered only once. */
  conversation?: string;
  /** Hears each try the endpoint took up that brought no reply (stopped, cut by the timeout, dropped mid-stream), with
   * the text it had streamed: the budgets count those too. */
  onUnanswered?: (tried: UnansweredTry) => void;
}

export type UnansweredTry = { model: string; streamed: string };

export type Model = { complete(request: ModelRequest): Promise<ModelReply> };

export interface ModelOptions {
  apiKey: string;
  baseUrl: string;
  model: string;
  timeoutSeconds: number;
  retries: number;
  stream: boolean;
  temperature?: number;
  /** Mark the request's stable boundaries with `cache_control` (endpoints that cache only there; off by default). */
  cacheMarkers?: boolean;
}

/** The openai package (~10 MB, ~70 ms to load) is imported by the first request, so channels connect without waiting
 * for it; a broken install is a permanent ModelError. Retries and the deadline are boundedCall's: the client's own
 * would retry a request refused for good, and its timeout ends with the headers. */
export async function openAIClient(options: { apiKey: string; baseUrl: string; timeoutSeconds: number }) {
  const { default: OpenAI } = await import("openai").catch((err: Error) => {
    const why = `the model client could not be loaded (${shorten(err.message)})`;
    throw new ModelError(`${why}; reinstall pincer's dependencies (npm ci)`, true);
  });
  const { apiKey, baseUrl: baseURL, timeoutSeconds } = options;
  const client = new OpenAI({ apiKey, baseURL, timeout: timeoutSeconds * 1000, maxRetries: 0, fetch: sendBytes });
  return { OpenAI, client };
}

/** The body as UTF-8 bytes: fetch would copy the client's JSON string (to well-formed UTF-16) and hold the copy until
 * the answer ends, long enough to be promoted: a fifth of a soak turn's old-generation garbage (docs/benchmarks.md). */
const sendBytes = (url: string | URL | Request, init?: RequestInit) =>
  fetch(url, typeof init?.body === "string" ? { ...init, body: Buffer.from(init.body) } : init);

/** An OpenAI-compatible chat-completions model (streaming optional: some servers do only one), replies normalised. */
export function createOpenAIModel(options: ModelOptions): Model {
  let made: Awaited<ReturnType<typeof openAIClient>> | undefined;
  // What this endpoint accepts, learned from its refusals.
  let accepted = DEFAULT_REQUEST_OPTIONS;
  // It returned calls in the API's field: its server parses calls, so markup in its text is a quote, never run.
  let parsesCalls = false;
  // Its chat template opens `<think>` itself (a reply closed it alone): a stream's text is reasoning until `</think>`.
  // Unknown until a reply with text shows which; sticky once seen.
  let opensThinking: boolean | undefined;
  const bounds = { timeoutMs: options.timeoutSeconds * 1000, retries: options.retries, who: "the model" };
  /** `tried`: this try's record, filled as it goes (reached: the endpoint took the request up). */
  const once = async (request: ModelRequest, tried: Tried): Promise<ModelReply> => {
    const { messages, tools, signal, maxTokens, onText } = request;
    made ??= await openAIClient(options);
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
          messages: options.cacheMarkers ? withCacheMarkers(messages) : messages,
          ...(offered ? { tools: offered, tool_choice: "auto" as const } : {}),
          ...(maxTokens !== undefined && sent.lengthField ? { [sent.lengthField]: maxTokens } : {}),
        };
        const usage = sent.streamUsage ? { stream_options: { include_usage: true } } : {};
        try {
          const shown = onText && untilReasoningEnds(onText, () => opensThinking === false);
          let collected: Collected | undefined;
          if (streaming) {
            const stream = await client.chat.completions.create({ ...body, stream: true, ...usage }, { signal });
            tried.reached = true;
            collected = await collectStream(stream, (text) => {
              tried.streamed = text;
              shown?.(text);
            });
          } else collected = fromCompletion(await client.chat.completions.create(body, { signal }));
          if (!collected) throw new ModelError("the model returned no choices");
          const names = (offered ?? []).map((tool) => tool.function.name);
          parsesCalls ||= collected.raw.toolCalls.length > 0;
          const text = textOf(collected.raw.content);
          if (text.trim() !== "") opensThinking = opensThinking === true || closesThinkingAlone(text);
          const reply = normalizeReply(collected.raw, names, () => !parsesCalls && !inputsCarryCalls(messages, names));
          return { ...reply, usage: collected.usage, model: options.model };
        } catch (err) {
          // A field this endpoint does not know: asked again at once without it, and never sent again.
          const refused = err instanceof OpenAI.APIError && (err.status === 400 || err.status === 422);
          const retry = refused && withoutRefused(sent, err.message, streaming);
          if (!retry) throw err;
          accepted = retry;
        }
      }
    } catch (err) {
      // Stopped or timed out while the endpoint worked on it: the prompt was read (and perhaps more).
      tried.reached ||= signal?.aborted === true || err instanceof OpenAI.APIConnectionTimeoutError;
      throw toModelError(err, OpenAI, options);
    }
  };
  return {
    async complete(request) {
      const tries: Tried[] = [];
      try {
        const reply = await boundedCall(bounds, request.signal, (signal) => {
          tries.push({ reached: false, streamed: "" });
          return once({ ...request, signal }, tries[tries.length - 1]);
        });
        // The try that brought the reply is counted with it.
        tries.pop();
        return reply;
      } finally {
        for (const { reached, streamed } of tries) {
          if (reached) request.onUnanswered?.({ model: options.model, streamed });
        }
      }
    },
  };
}

type Tried = { reached: boolean; streamed: string };

/** `onText` held back until the text cannot be reasoning any more: at once when `plain()`, else from a `</think>` on.
 * Each piece is searched once (with the tag's length before it), so a long stream costs no more than its length. */
function untilReasoningEnds(onText: (text: string) => void, plain: () => boolean): (text: string) => void {
  let searched = 0;
  let closed = false;
  return (text) => {
    closed ||= plain() || text.indexOf("</think>", Math.max(0, searched - "</think>".length)) >= 0;
    searched = text.length;
    if (closed) onText(text);
  };
}

/** Optional request fields some endpoints refuse, not sent to them again: `stream_options` (asks a stream for `usage`;
 * older vLLM, some proxies refuse it) and the answer limit's name (OpenAI's reasoning models want
 * `max_completion_tokens`, most local servers know only `max_tokens`; none once both were refused). */
type RequestOptions = { streamUsage: boolean; lengthField?: "max_tokens" | "max_completion_tokens" };

export const DEFAULT_REQUEST_OPTIONS: RequestOptions = { streamUsage: true, lengthField: "max_tokens" };

/** Words servers use when they refuse a field they do not know (OpenAI, vLLM, pydantic, LiteLLM). */
const REFUSED_FIELD =
  /unsupported|unrecogni[sz]ed|unknown|not supported|not permitted|not allowed|extra[ _](inputs|fields|forbidden)|invalid (field|param)/i;

/** The options to retry with after a 400 that refuses a field we sent; undefined when it refuses something else. */
export function withoutRefused(
  options: RequestOptions,
  message: string,
  streamed: boolean,
): RequestOptions | undefined {
  if (!REFUSED_FIELD.test(message)) return undefined;
  if (streamed && options.streamUsage && message.includes("stream_options")) return { ...options, streamUsage: false };
  if (options.lengthField === "max_tokens" && message.includes("max_completion_tokens")) {
    return { ...options, lengthField: "max_completion_tokens" };
  }
  if (options.lengthField && message.includes(options.lengthField)) return { ...options, lengthField: undefined };
  return undefined;
}

/** Anthropic's marker: the prefix up to and including this part is written to (and read from) its cache. */
const MARK = { type: "ephemeral" } as const;

/** The request with `cache_control` where endpoints that cache only where told (Anthropic's) should: the end of the
 * system prompt (the same in every request) and of the request (the next one starts with it). Two of four allowed. */
export function withCacheMarkers(messages: ChatMessage[]): ChatMessage[] {
  const last = messages.length - 1;
  return messages.map((message, i) =>
    (i === 0 && message.role === "system") || i === last ? marked(message) : message,
  );
}

function marked(message: ChatMessage): ChatMessage {
  if (message.role === "function") return message;
  const { content } = message;
  if (typeof content === "string" && content !== "") {
    const part = { type: "text" as const, text: content, cache_control: MARK };
    return { ...message, content: [part] } as ChatMessage;
  }
  if (!Array.isArray(content) || content.length === 0) return message;
  // The last text part takes the marker: a picture after it stays unmarked, as the prefix ends with the text.
  const at = content.findLastIndex((part) => part.type === "text");
  if (at < 0) return message;
  const parts = content.map((part, i) => (i === at ? { ...part, cache_control: MARK } : part));
  return { ...message, content: parts } as ChatMessage;
}
