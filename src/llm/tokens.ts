import { createRequire } from "node:module";
import type { ChatMessage } from "./model.js";

/** One encoding's module of gpt-tokenizer (both have the same shape). */
type Encoding = typeof import("gpt-tokenizer/encoding/o200k_base");
type Count = Encoding["countTokens"];

// gpt-tokenizer's CommonJS build, so the first count can load its encoding synchronously.
const requireCjs = createRequire(import.meta.url);

export type EncodingName = "o200k_base" | "cl100k_base";

/**
 * Counts tokens the way the model's endpoint will, as closely as a local tokenizer can:
 * gpt-tokenizer's BPE for the model's encoding, times a factor learned from the `usage` the
 * endpoint reports (other tokenizers — Llama, Qwen, Mistral — split differently).
 */
export interface TokenCounter {
  readonly encoding: EncodingName;
  /** Tokens of a piece of text, calibrated. */
  text(text: string): number;
  /** Tokens of a chat message with its framing and tool calls, calibrated. */
  message(message: ChatMessage): number;
  /** Tokens of a chat message before calibration (what the store keeps; scale by `factor` when using it). */
  rawMessage(message: ChatMessage): number;
  /** Tokens of a whole request: messages plus the tools' JSON schemas. */
  request(messages: ChatMessage[], tools?: unknown[]): number;
  /** Feeds back what the endpoint said a request cost (`usage.prompt_tokens`). */
  calibrate(counted: number, reported: number): void;
  /** The current calibration factor (1 until the endpoint reports more than we counted). */
  readonly factor: number;
}

/**
 * OpenAI's current models (gpt-4o, gpt-4.1, gpt-5, o-series) use o200k_base; gpt-4 and gpt-3.5
 * use cl100k_base. Anything else — local and third-party models — falls back to o200k_base,
 * whose counts are then corrected by calibration against the endpoint's `usage`.
 */
export function encodingForModel(model: string): EncodingName {
  const name = model.toLowerCase().replace(/^.*\//, "");
  if (/^(gpt-4(?!o|\.)|gpt-3\.5|text-embedding-(ada|3))/.test(name)) return "cl100k_base";
  return "o200k_base";
}

/** Each message costs a few tokens of framing (role, separators) beyond its text. */
const MESSAGE_OVERHEAD = 4;
/**
 * BPE merges are quadratic in the length of one pre-token, and a run of CJK text or emoji without
 * spaces is one pre-token: 110,000 Chinese characters took 142 s in one piece. Counting in slices of
 * this many UTF-16 units keeps it linear; a slice boundary adds at most a token, so counts stay high.
 */
const SLICE = 256;
/** Past this many characters the rest is extrapolated from the counted part, so a pasted book costs milliseconds. */
const EXACT_CHARS = 32_000;
const MAX_FACTOR = 4;
const IMPLAUSIBLE_FACTOR = 2 * MAX_FACTOR;
const MEMO_MIN_CHARS = 2000;
const MEMO_ENTRIES = 16;
/** Slices of long texts remembered (at most 256 characters each, so at most ~0.5 MB). */
const SLICE_ENTRIES = 1024;
/**
 * An image part, counted without decoding it: OpenAI charges 765 tokens for a 1024×1024 picture
 * at high detail (pincer downscales photos to that); other endpoints differ, calibration adjusts.
 */
const IMAGE_TOKENS = 800;

/**
 * Loads one encoding's merge tables. They are big (o200k_base: ~70 MB and ~150 ms; cl100k_base:
 * ~40 MB and ~80 ms), so this happens on the first count, not at start: the daemon gets its
 * channels up without them, and the first turn after a start pays the load once. It is
 * synchronous, so turns starting together cannot race it: the first one loads, the rest wait
 * behind it on the event loop and find it loaded.
 */
function loadEncoding(encoding: EncodingName): Count {
  try {
    return (requireCjs(`gpt-tokenizer/encoding/${encoding}`) as Encoding).countTokens;
  } catch (err) {
    throw new Error(
      `the token counter could not load gpt-tokenizer's ${encoding} (${(err as Error).message}); reinstall pincer's dependencies (npm ci)`,
      { cause: err },
    );
  }
}

export function createTokenCounter(model: string): TokenCounter {
  const encoding = encodingForModel(model);
  let loaded: Count | undefined;
  const count: Count = (text, options) => {
    loaded ??= loadEncoding(encoding);
    return loaded(text, options);
  };
  // Special-token strings in user text (`<|endoftext|>`) are plain text to us, not an error.
  const options = { disallowedSpecial: new Set<string>() };
  let factor = 1;

  // The tools' schemas and the workspace files come back every turn: remember a few long texts.
  const memo = new Map<string, number>();
  const raw = (text: string): number => {
    if (text.length === 0) return 0;
    if (text.length >= MEMO_MIN_CHARS) {
      const known = memo.get(text);
      if (known !== undefined) return known;
      const counted = rawUncached(text, true);
      if (memo.size >= MEMO_ENTRIES) memo.delete(memo.keys().next().value as string);
      memo.set(text, counted);
      return counted;
    }
    return rawUncached(text, false);
  };
  // Long texts that differ only near their end share their first slices: every chat's system
  // prompt is the same workspace files followed by its own runtime lines, so a chat seen for
  // the first time costs only its last slices.
  const slices = new Map<string, number>();
  const countSlice = (slice: string, remember: boolean): number => {
    if (!remember) return count(slice, options);
    const known = slices.get(slice);
    if (known !== undefined) return known;
    const counted = count(slice, options);
    if (slices.size >= SLICE_ENTRIES) slices.delete(slices.keys().next().value as string);
    slices.set(ownCopy(slice), counted);
    return counted;
  };
  const rawUncached = (text: string, remember: boolean): number => {
    const exactPart = text.length > EXACT_CHARS ? text.slice(0, EXACT_CHARS) : text;
    let tokens = 0;
    for (let i = 0; i < exactPart.length; ) {
      let end = Math.min(exactPart.length, i + SLICE);
      // Never split a surrogate pair: half an emoji would count as replacement bytes.
      if (end < exactPart.length && isHighSurrogate(exactPart.charCodeAt(end - 1))) end++;
      tokens += countSlice(exactPart.slice(i, end), remember);
      i = end;
    }
    if (exactPart.length === text.length) return tokens;
    return Math.ceil((tokens / exactPart.length) * text.length * 1.1);
  };

  const rawMessage = (message: ChatMessage): number => {
    let tokens = MESSAGE_OVERHEAD + raw(contentText(message.content)) + IMAGE_TOKENS * imageCount(message.content);
    if (message.role === "assistant" && message.tool_calls) {
      for (const call of message.tool_calls) {
        if (call.type === "function")
          tokens += MESSAGE_OVERHEAD + raw(call.function.name) + raw(call.function.arguments);
      }
    }
    if (message.role === "tool") tokens += raw(message.tool_call_id);
    return tokens;
  };

  const rawRequest = (messages: ChatMessage[], tools?: unknown[]): number =>
    messages.reduce((n, m) => n + rawMessage(m), 3) + (tools && tools.length > 0 ? raw(JSON.stringify(tools)) : 0);

  const scale = (tokens: number) => Math.ceil(tokens * factor);

  return {
    encoding,
    text: (text) => scale(raw(text)),
    message: (message) => scale(rawMessage(message)),
    rawMessage,
    request: (messages, tools) => scale(rawRequest(messages, tools)),
    calibrate(counted, reported) {
      // `counted` is already scaled; recover the raw count so the factor does not compound.
      const rawCounted = counted / factor;
      if (!(rawCounted > 200) || !(reported > 0)) return;
      // No tokenizer splits text that differently: such a count is the server's bug (a running
      // total, another request's). Believed, it would make the instructions alone too big for a
      // small window, and no request would go out again to correct it.
      if (reported / rawCounted > IMPLAUSIBLE_FACTOR) return;
      const observed = Math.min(MAX_FACTOR, Math.max(1, reported / rawCounted));
      // Rise at once (never send more than the endpoint allows), fall back slowly.
      factor = observed >= factor ? observed : factor * 0.8 + observed * 0.2;
    },
    get factor() {
      return factor;
    },
  };
}

function contentText(content: ChatMessage["content"]): string {
  if (content == null) return "";
  if (typeof content === "string") return content;
  return content.map((part) => ("text" in part ? part.text : "")).join("");
}

function imageCount(content: ChatMessage["content"]): number {
  return Array.isArray(content) ? content.filter((part) => part.type === "image_url").length : 0;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/**
 * A string of its own. V8 makes `text.slice()` a view that keeps the whole of `text` alive: a
 * remembered slice of each chat's system prompt would keep that prompt (up to ~150 KB with
 * MEMORY.md) for as long as the slice is remembered.
 */
function ownCopy(slice: string): string {
  return Buffer.from(slice, "utf16le").toString("utf16le");
}
