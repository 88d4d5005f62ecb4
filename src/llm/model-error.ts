import type OpenAI from "openai";
import { type ContextRefusal, readContextRefusal } from "./context-window.js";
import { describeFailure, isAwayFailure, isPermanentFailure, shorten } from "./failure.js";

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

/** The openai client's failure as a ModelError; the caller's own abort stays what it is. */
export function toModelError(
  err: unknown,
  OpenAIClass: typeof OpenAI,
  options: { baseUrl: string; model: string },
  signal?: AbortSignal,
): Error {
  if (err instanceof ModelError) return err;
  if (signal?.aborted) return signal.reason instanceof Error ? signal.reason : new Error("aborted");
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
