// Tool calls a model wrote into its text (servers whose template or parser does not know its format pass them on):
// Hermes/Qwen `<tool_call>{…}</tool_call>`, Mistral's `[TOOL_CALLS][{…}]` and `[TOOL_CALLS]name[ARGS]{…}`, and a bare
// JSON call that is the whole content. Promoted only when naming an offered tool (a looser parse turns prose about
// JSON into actions). Markup is removed either way; a bare JSON object naming no offered tool is not markup.

/** A ToolCall without its id (not imported: reply.ts imports this file). */
type TextCall = { name: string; arguments: string };

/** `text`: the content without tool-call markup; `unknown`: names of calls that named no offered tool (or none). */
type TextCallsFound = { text: string; calls: TextCall[]; unknown: string[] };

const HERMES = /<tool_call>([\s\S]*?)(?:<\/tool_call>|$)/g;
const MISTRAL = "[TOOL_CALLS]";

export function findTextToolCalls(content: string, offered: ReadonlySet<string>): TextCallsFound {
  const found: TextCallsFound = { text: content, calls: [], unknown: [] };
  const take = (value: unknown) => {
    const call = asCall(value);
    if (call && offered.has(call.name)) found.calls.push(call);
    else found.unknown.push(call?.name ?? "");
  };
  let taken = false;
  found.text = content.replace(HERMES, (block, inner: string) => {
    const body = inner.trim();
    // Prose about the tag ("Qwen writes <tool_call> tags") is no call: a JSON body is, or nested tags.
    if (!/^[[{]|^<tool_call>/.test(body)) return block;
    taken = true;
    const parsed = parseJson(leadingJson(body));
    for (const value of Array.isArray(parsed) ? parsed : [parsed]) take(value);
    return "";
  });
  // A closing tag left over from nested tags.
  if (taken) found.text = found.text.replaceAll("</tool_call>", "");
  const marker = found.text.indexOf(MISTRAL);
  if (marker >= 0 && isMistralCall(found.text.slice(marker + MISTRAL.length))) {
    for (const value of mistralCalls(found.text.slice(marker))) take(value);
    found.text = found.text.slice(0, marker);
  }
  if (found.calls.length === 0 && found.unknown.length === 0) {
    const bare = bareCalls(content, offered);
    if (bare) return { text: "", calls: bare, unknown: [] };
  }
  found.text = found.text.trim();
  return found;
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

/** The whole content (perhaps in a ```json fence) is one call or a list of calls, each naming an offered tool. */
function bareCalls(content: string, offered: ReadonlySet<string>): TextCall[] | undefined {
  let body = content.trim();
  // A fenced block: drop the opening line (``` or ```json) and the closing fence, without a regex that backtracks.
  if (body.startsWith("```") && body.endsWith("```") && body.length > 6) {
    const firstLine = body.indexOf("\n");
    if (firstLine < 0 || !/^```(json)?$/.test(body.slice(0, firstLine).trim())) return undefined;
    body = body.slice(firstLine + 1, -3).trim();
  }
  // Text that is not JSON parses to undefined, and a number or a string is no call either.
  const parsed = parseJson(body);
  const calls = (Array.isArray(parsed) ? parsed : [parsed]).map(asCall);
  if (calls.length === 0 || !calls.every((call) => call && offered.has(call.name))) return undefined;
  return calls as TextCall[];
}

/** `{"name", "arguments"}` (Hermes, Mistral) or `{"name", "parameters"}` (Llama 3), arguments as object or JSON text. */
function asCall(value: unknown): TextCall | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const { name, arguments: args, parameters } = value as Record<string, unknown>;
  if (typeof name !== "string" || name === "") return undefined;
  const given = args ?? parameters ?? {};
  return { name, arguments: typeof given === "string" ? given : JSON.stringify(given) };
}

/** JSON.parse, undefined for text that is not JSON. */
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
