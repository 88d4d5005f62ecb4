import type OpenAI from "openai";
import { clip } from "../text.js";
import { type ContextRefusal, readContextRefusal } from "./context-limits.js";

/** The model endpoint failed; `message` is fit for the user. `permanent`: will not heal by waiting (a refused key, a
 * wrong URL or model, a request at fault); `away`: the endpoint is not there rather than refusing. A timeout is not
 * `away`: a server busy with a long answer on a slow machine looks the same as a hung one. */
export class ModelError extends Error {
  constructor(
    message: string,
    readonly permanent = false,
    readonly status?: number,
    readonly away = !permanent && isAwayFailure(status),
  ) {
    super(message);
  }
}

/** Refused as too long for the context: permanent whatever its status (older llama.cpp answers 500), so no fallback
 * or circuit breaker takes it for an outage. */
export class ContextRefusedError extends ModelError {
  constructor(
    message: string,
    readonly refusal: ContextRefusal,
    status?: number,
  ) {
    super(message, true, status);
  }
}

/** The openai client's failure as a ModelError (an aborted call's reason is boundedCall's to throw). */
export function toModelError(err: unknown, OpenAIClass: typeof OpenAI, options: { baseUrl: string; model: string }) {
  if (err instanceof ModelError) return err;
  if (err instanceof OpenAIClass.APIConnectionTimeoutError) {
    return new ModelError("the model did not answer in time", false, undefined, false);
  }
  if (err instanceof OpenAIClass.APIConnectionError) return new ModelError("the model endpoint could not be reached");
  if (err instanceof OpenAIClass.AuthenticationError) {
    return new ModelError("the model endpoint refused the API key (401): check OPENAI_API_KEY", true, 401);
  }
  if (err instanceof OpenAIClass.NotFoundError) return new ModelError(notFoundHint(options), true, 404);
  if (err instanceof OpenAIClass.RateLimitError) {
    return new ModelError("the model endpoint is rate-limiting us (429)", false, 429);
  }
  if (err instanceof OpenAIClass.APIError && err.status) {
    // The error's type names the cause on some servers (llama.cpp's exceed_context_size_error).
    const verdict = `${err.message} ${typeof err.type === "string" ? err.type : ""}`;
    const message = describeFailure(err.status, err.message);
    const refusal = readContextRefusal(err.message, err.error);
    if (refusal) return new ContextRefusedError(message, refusal, err.status);
    return new ModelError(message, isPermanentFailure(err.status, verdict), err.status);
  }
  // An answer the client could not read (a broken body): the endpoint is there, and wrong.
  const said = shorten((err as Error)?.message ?? String(err));
  return new ModelError(`the model call failed: ${said}`, false, undefined, false);
}

/** A 404 is nearly always a base URL without its `/v1` or a model name the endpoint does not serve. */
export function notFoundHint({ baseUrl, model }: { baseUrl: string; model: string }): string {
  const path = new URL(baseUrl).pathname.replace(/\/+$/, "");
  const url =
    path === ""
      ? `OPENAI_BASE_URL ${baseUrl} has no path; most endpoints want ${baseUrl}/v1`
      : `check OPENAI_BASE_URL (${baseUrl})`;
  return `the model endpoint answered 404 (not found): ${url}, and that PINCER_MODEL "${model}" is a model it serves`;
}

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
  // Without the status it repeats (the client adds one, servers often another), on one line, cut at 200.
  const said = shorten(
    text
      .replace(new RegExp(`^(\\s*${status}\\b[\\s:-]*)+`), "")
      .replace(/\s+/g, " ")
      .trim(),
  );
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

export const shorten = (text: string) => clip(text, 200);
