import { escapeRegExp } from "../text.js";

// Tool calls a model wrote into its text (servers whose parser does not know its format pass them on): Hermes/Qwen
// `<tool_call>{…}</tool_call>`, Mistral's `[TOOL_CALLS][{…}]` and `[TOOL_CALLS]name[ARGS]{…}`, and a bare JSON call
// that is the whole content. Promoted only when naming an offered tool (a looser parse turns prose about JSON into
// actions) and outside code. Markup is removed either way; a bare JSON object naming no offered tool is not markup.

/** A ToolCall without its id (not imported: reply.ts imports this file). */
type TextCall = { name: string; arguments: string };

/** `text`: the content without tool-call markup; `unknown`: names of calls that named no offered tool (or none). */
type TextCallsFound = { text: string; calls: TextCall[]; unknown: string[] };

const HERMES = /<tool_call>([\s\S]*?)(?:<\/tool_call>|$)/g;
const MISTRAL = "[TOOL_CALLS]";
/** After `<tool_call>`, a call: a JSON body, or nested tags. Anything else is prose about the tag. */
const CALL_BODY = /^\s*(?:[[{]|<tool_call>)/;

export function findTextToolCalls(content: string, offered: ReadonlySet<string>): TextCallsFound {
  const found: TextCallsFound = { text: content, calls: [], unknown: [] };
  const take = (value: unknown) => {
    const call = asCall(value);
    if (call && offered.has(call.name)) found.calls.push(call);
    else found.unknown.push(call?.name ?? "");
  };
  // Markup inside code (a fence or a span) is shown, never run: it is what the model quotes or explains.
  const pieces = splitAtCode(content).map((piece, i) => (i % 2 === 1 ? piece : callsOutOf(piece, take)));
  found.text = pieces.join("");
  if (found.calls.length === 0 && found.unknown.length === 0) {
    const bare = bareCalls(content, offered);
    if (bare) return { text: "", calls: bare, unknown: [] };
  }
  found.text = found.text.trim();
  return found;
}

/** `text` without the calls' markup, each call's JSON given to `take`. */
function callsOutOf(text: string, take: (value: unknown) => void): string {
  let taken = false;
  let rest = text.replace(HERMES, (block, inner: string) => {
    const body = inner.trim();
    if (!CALL_BODY.test(body)) return block;
    taken = true;
    const parsed = parseJson(leadingJson(body));
    for (const value of Array.isArray(parsed) ? parsed : [parsed]) take(value);
    return "";
  });
  // A closing tag left over from nested tags.
  if (taken) rest = rest.replaceAll("</tool_call>", "");
  const marker = rest.indexOf(MISTRAL);
  if (marker >= 0 && isMistralCall(rest.slice(marker + MISTRAL.length))) {
    for (const value of mistralCalls(rest.slice(marker))) take(value);
    rest = rest.slice(0, marker);
  }
  return rest;
}

/** `text` cut into pieces outside and inside code, alternately (the odd ones are code, delimiters included): a run of
 * backticks opens code, and the next run as long closes it (a fence of three or more closes with at least as many);
 * unclosed code runs to the end. A call's markup begun outside code stays outside to its closing tag (a Mistral call:
 * to the end), backticks in its arguments and all. One pass, no backtracking. */
export function splitAtCode(text: string): string[] {
  const pieces: string[] = [];
  const next = { tick: -1, hermes: -1, mistral: -1 };
  const find = (key: keyof typeof next, needle: string, from: number) => {
    if (next[key] !== Number.POSITIVE_INFINITY && next[key] < from) {
      const at = text.indexOf(needle, from);
      next[key] = at < 0 ? Number.POSITIVE_INFINITY : at;
    }
    return next[key];
  };
  let start = 0;
  let at = 0;
  for (;;) {
    const tick = find("tick", "`", at);
    const hermes = find("hermes", "<tool_call>", at);
    const mistral = find("mistral", MISTRAL, at);
    const first = Math.min(tick, hermes, mistral);
    if (first === Number.POSITIVE_INFINITY) break;
    if (first === mistral) {
      // A call runs to the end; prose that names the token does not.
      if (isMistralCall(text.slice(mistral + MISTRAL.length, mistral + 300))) break;
      at = mistral + MISTRAL.length;
      continue;
    }
    if (first === hermes) {
      const body = hermes + "<tool_call>".length;
      if (!CALL_BODY.test(text.slice(body, body + 200))) {
        at = body;
        continue;
      }
      const close = text.indexOf("</tool_call>", body);
      if (close < 0) break;
      at = close + "</tool_call>".length;
      continue;
    }
    let end = tick;
    while (text[end] === "`") end++;
    const run = end - tick;
    let close = text.indexOf("`", end);
    for (; close >= 0; close = text.indexOf("`", end)) {
      end = close;
      while (text[end] === "`") end++;
      if (end - close === run || (run >= 3 && end - close >= run)) break;
    }
    pieces.push(text.slice(start, tick), text.slice(tick, close < 0 ? text.length : end));
    start = at = close < 0 ? text.length : end;
  }
  pieces.push(text.slice(start));
  return pieces;
}

/** What follows the marker is a call (JSON, or `name[ARGS]`), not prose that mentions the token. */
function isMistralCall(rest: string): boolean {
  return /^(?:[[{]|[\w.-]+(?:\[CALL_ID\][\w-]*)?\[ARGS\])/.test(rest.trimStart());
}

/** `[TOOL_CALLS][{…}, …]` (older Mistral) or `[TOOL_CALLS]name[ARGS]{…}` repeated (v11 and later). */
function mistralCalls(text: string): unknown[] {
  const values: unknown[] = [];
  for (const part of text.split(MISTRAL).slice(1)) {
    const body = part.trim();
    if (body.startsWith("[") || body.startsWith("{")) {
      const parsed = parseJson(leadingJson(body));
      values.push(...(Array.isArray(parsed) ? parsed : [parsed]));
      continue;
    }
    const args = body.indexOf("[ARGS]");
    // `name[CALL_ID]id[ARGS]{…}` in some versions: the id is not needed.
    const name = body.slice(0, args).replace(/\[CALL_ID\][\s\S]*$/, "");
    values.push(
      args < 0
        ? undefined
        : { name: name.trim(), arguments: parseJson(leadingJson(body.slice(args + "[ARGS]".length).trim())) ?? {} },
    );
  }
  return values;
}

/** The whole content is one call or a list of calls, each naming an offered tool (never one in a code fence: that is
 * shown, as a quote). */
function bareCalls(content: string, offered: ReadonlySet<string>): TextCall[] | undefined {
  const trimmed = content.trim();
  // Most replies are prose: a failed JSON.parse costs a thrown error each.
  if (!/^[[{]/.test(trimmed)) return undefined;
  const parsed = parseJson(trimmed);
  const calls = (Array.isArray(parsed) ? parsed : [parsed]).map(asCall);
  if (calls.length === 0 || !calls.every((call) => call && offered.has(call.name))) return undefined;
  return calls as TextCall[];
}

/** `{"name", "arguments"}` (Hermes, Mistral) or `{"name", "parameters"}` (Llama 3), arguments as object or JSON text. */
function asCall(value: unknown): TextCall | undefined {
  if (!isRecord(value)) return undefined;
  const { name, arguments: args, parameters } = value;
  if (typeof name !== "string" || name === "") return undefined;
  const given = args ?? parameters ?? {};
  return { name, arguments: typeof given === "string" ? given : JSON.stringify(given) };
}

const MARKERS = ["<tool_call", MISTRAL, "[ARGS]"];

/** Whether any input of a request (the user's message, tool results, fetched pages, instructions, history) carries
 * tool-call markup, or a JSON call naming one of `names`: text calls in the reply may then be quotes, never run. */
export function inputsCarryCalls(messages: ReadonlyArray<{ content?: unknown }>, names: readonly string[]): boolean {
  const escaped = names.map(escapeRegExp);
  // Quotes as JSON, JSON inside a JSON string (\"name\") or Python's repr ('name') write them; at most two
  // backslashes before each, so a run of them costs nothing to scan.
  const q = `\\\\{0,2}["']`;
  const jsonCall = new RegExp(`["']name${q}\\s*:\\s*${q}(?:${escaped.join("|")})${q}`);
  return messages.some(({ content }) => {
    const parts = Array.isArray(content) ? content : [content];
    return parts.some((part) => {
      const text = typeof part === "string" ? part : (part as { text?: unknown } | null)?.text;
      if (typeof text !== "string") return false;
      return MARKERS.some((marker) => text.includes(marker)) || (names.length > 0 && jsonCall.test(text));
    });
  });
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The object or array opening `text` (strings and escapes respected), without what follows; "" when there is none. */
function leadingJson(text: string): string {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "{" || c === "[") depth++;
    else if (c === "}" || c === "]") {
      depth--;
      if (depth === 0) return text.slice(0, i + 1);
      if (depth < 0) return "";
    } else if (depth === 0 && !/\s/.test(c)) return "";
  }
  return "";
}
