// What a failed model call says about the request and the endpoint, from the HTTP status (undefined: no answer) and the error text.

/** Servers blaming the request itself (llama.cpp's "Unexpected empty grammar stack", "tools param requires --jinja
 * flag", template errors, context refusals, "invalid …", "failed to parse …"): waiting does not change such an answer. */
const REQUEST_AT_FAULT =
  /grammar|jinja|tools? param|template|context[ _-]?(size|length|window)|n_ctx|maximum context|too (long|large)|invalid|pars(e|ing)|malformed/i;

/** Statuses of a gateway or a server too busy to look at the request: they say nothing about it. */
const AWAY = new Set([502, 503, 504]);

/** Not asked again, not given to a fallback, not counted by the circuit breaker: every 4xx but 408 and 429, and a 5xx
 * whose text blames the request. */
export function isPermanentFailure(status: number | undefined, text = ""): boolean {
  if (status === undefined || status === 408 || status === 429) return false;
  if (status >= 400 && status < 500) return true;
  return status >= 500 && !AWAY.has(status) && REQUEST_AT_FAULT.test(text);
}

/** Away rather than refusing (no connection, a gateway or overload status, a rate limit): a message waits long for
 * such an endpoint; one it answers with its own error (or too slowly) is given up soon. */
export function isAwayFailure(status: number | undefined): boolean {
  return status === undefined || status === 408 || status === 429 || AWAY.has(status);
}

/** The endpoint's error in a sentence for the user: the status once, never the server's internals, and what to change. */
export function describeFailure(status: number, text: string): string {
  const said = cleanText(status, text);
  if (/--jinja|tools? param/i.test(said)) {
    return `the model endpoint refuses requests with tools (${status}); llama-server needs --jinja and a chat template with tool support`;
  }
  if (/grammar/i.test(said)) return `the model endpoint failed while the model was writing a tool call (${status})`;
  // llama.cpp's "Failed to parse input at pos 12: <the model's output>": the model's words, not the request's.
  if (status >= 500 && /pars(e|ing)/i.test(said)) {
    return `the model endpoint could not read what the model wrote (${status})`;
  }
  if (/template/i.test(said))
    return `the model endpoint's chat template could not render this conversation (${status})`;
  if (/context|n_ctx|too (long|large)/i.test(said)) {
    return `the conversation is larger than the model endpoint's context window (${status}); /new starts a fresh one`;
  }
  return said ? `the model endpoint answered ${status}: ${said}` : `the model endpoint answered ${status}`;
}

/** The text without the status it repeats (the client adds one, servers often another), on one line, cut at 200. */
function cleanText(status: number, text: string): string {
  return shorten(
    text
      .replace(new RegExp(`^(\\s*${status}\\b[\\s:-]*)+`), "")
      .replace(/\s+/g, " ")
      .trim(),
  );
}

export function shorten(text: string): string {
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}
