/** Optional request fields some endpoints refuse, not sent to them again: `stream_options` (asks a stream for `usage`;
 * older vLLM, some proxies refuse it) and the answer limit's name (OpenAI's reasoning models want
 * `max_completion_tokens`, most local servers know only `max_tokens`; none once both were refused). */
export type RequestOptions = { streamUsage: boolean; lengthField?: "max_tokens" | "max_completion_tokens" };

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
