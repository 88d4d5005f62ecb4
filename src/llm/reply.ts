import { randomBytes } from "node:crypto";
import { findTextToolCalls, isRecord, parseJson } from "./text-tool-calls.js";

/** `arguments`: a JSON text, as the API carries it. */
export type ToolCall = { id: string; name: string; arguments: string };

/** A reply made regular: ModelReply without `usage` and `model` (apart so that model.ts can import this file). */
export interface NormalizedReply {
  content: string;
  toolCalls: ToolCall[];
  /** As the server said, if it did: "stop", "tool_calls", or "length" (cut at `maxTokens` or the context: the text is
   * incomplete, tool calls may be half-written). */
  finishReason?: string;
  /** Tool calls the normalising threw away (no name, not an offered tool), in words for the model. */
  discarded?: string[];
  /** The tool calls were written as text and promoted: the user is shown what runs (the chat never shows markup). */
  fromText?: true;
}

/** One reply as a server sent it, shapes unchecked. */
export interface RawReply {
  content: unknown;
  toolCalls: Array<{ id?: unknown; name?: unknown; arguments?: unknown }>;
  finishReason?: unknown;
}

/** A reply the loop can trust, whatever the server sent: no reasoning, tool calls written as text made real when they
 * name an offered tool and `readTextCalls()` allows it (asked only of text with calls and none in the API's field),
 * odd shapes made regular (content as parts or an object, arguments as an object, ids missing or repeated). A call
 * without a name cannot be run, answered or stored in a form every server accepts: it is dropped and listed in
 * `discarded`, so the loop can tell the model when nothing else is left. */
export function normalizeReply(
  raw: RawReply,
  offered: readonly string[],
  readTextCalls: () => boolean,
  newId = callId,
): NormalizedReply {
  const discarded: string[] = [];
  const ids = new Set<string>();
  const uniqueId = (id: unknown) => {
    const given = typeof id === "string" && id.trim() !== "" && !ids.has(id) ? id : newId();
    ids.add(given);
    return given;
  };
  const toolCalls: ToolCall[] = [];
  for (const call of raw.toolCalls) {
    const name = typeof call.name === "string" ? call.name.trim() : "";
    if (name === "") {
      discarded.push("a tool call without a tool name");
      continue;
    }
    const args = call.arguments ?? {};
    toolCalls.push({ id: uniqueId(call.id), name, arguments: typeof args === "string" ? args : JSON.stringify(args) });
  }
  const content = withoutReasoning(textOf(raw.content));
  // Calls in the API's field win; markup next to them is the same calls echoed, or noise, and is removed.
  const structured = toolCalls.length > 0;
  // Whether text calls may be read is asked only of a reply that has some: it scans the whole request.
  const scanned = findTextToolCalls(content, new Set(offered));
  const markup = scanned.calls.length > 0 || scanned.unknown.length > 0;
  const found = structured || !markup || readTextCalls() ? scanned : { text: content, calls: [], unknown: [] };
  const promoted = structured ? [] : found.calls;
  for (const call of promoted) toolCalls.push({ id: uniqueId(undefined), ...call });
  if (toolCalls.length > MAX_CALLS) {
    discarded.push(`${toolCalls.length - MAX_CALLS} tool calls beyond the ${MAX_CALLS} one reply may make`);
    toolCalls.length = MAX_CALLS;
  }
  for (const name of found.unknown) {
    discarded.push(
      name
        ? `a tool call to "${name.slice(0, 64)}", which is not one of your tools`
        : "a tool call that could not be read",
    );
  }
  return {
    content: found.text,
    toolCalls,
    finishReason: finishReasonOf(raw.finishReason),
    ...(promoted.length > 0 ? { fromText: true as const } : {}),
    // Said once each, and a few at most: the list goes back to the model.
    ...(discarded.length > 0 ? { discarded: [...new Set(discarded)].slice(0, 5) } : {}),
  };
}

/** The text of a content field: a string, an array of parts (text parts kept), or an object with a `text`. */
export function textOf(content: unknown): string {
  return Array.isArray(content) ? content.map(partText).join("") : partText(content);
}

function partText(part: unknown): string {
  if (typeof part === "string") return part;
  if (typeof part === "number") return String(part);
  const text = typeof part === "object" && part !== null ? (part as { text?: unknown }).text : undefined;
  return typeof text === "string" ? text : "";
}

/** Without `<think>` blocks: closed ones anywhere, an unclosed one at the start (cut while thinking), and all before a
 * lone `</think>` (templates that open the block in the prompt, as DeepSeek-R1's and Qwen3's do). */
export function withoutReasoning(content: string): string {
  // By indexOf, not a lazy regex: that rescans to the end for every unclosed <think> (quadratic).
  let text = "";
  let at = 0;
  for (let open = content.indexOf(OPEN); open >= 0; open = content.indexOf(OPEN, at)) {
    const close = content.indexOf(CLOSE, open + OPEN.length);
    if (close < 0) break;
    text += content.slice(at, open);
    at = close + CLOSE.length;
  }
  text += content.slice(at);
  const lone = text.lastIndexOf(CLOSE);
  if (lone >= 0) text = text.slice(lone + CLOSE.length);
  if (text.trimStart().startsWith(OPEN)) return "";
  return text.trim();
}

/** A `</think>` with no `<think>` before it: the chat template opened the block in the prompt (DeepSeek-R1's, QwQ's). */
export function closesThinkingAlone(text: string): boolean {
  const close = text.indexOf(CLOSE);
  if (close < 0) return false;
  const open = text.indexOf(OPEN);
  return open < 0 || open > close;
}

/** Calls one reply may make: a model in a loop has sent thousands at once, and the next request could not fit them. */
const MAX_CALLS = 64;

const OPEN = "<think>";
const CLOSE = "</think>";

function finishReasonOf(reason: unknown): string | undefined {
  if (typeof reason !== "string" || reason === "") return undefined;
  // Some servers say it the way other APIs do.
  return reason === "max_tokens" ? "length" : reason;
}

/** Arguments fit to store and send back: a JSON object text as it was, anything else `{}` (llama.cpp and others
 * refuse a whole request whose history has arguments that are not JSON). */
export function storableArguments(args: unknown): string {
  if (typeof args !== "string") return isRecord(args) ? JSON.stringify(args) : "{}";
  return isRecord(parseJson(args)) ? args : "{}";
}

const ALPHANUMERIC = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** Nine alphanumeric characters: the one id shape every server accepts (Mistral's templates insist on it). */
export function callId(): string {
  return [...randomBytes(9)].map((byte) => ALPHANUMERIC[byte % ALPHANUMERIC.length]).join("");
}
