import { describe, expect, it } from "vitest";
import { DEFAULT_REQUEST_OPTIONS, withoutRefused } from "./model.js";

describe("withoutRefused", () => {
  const start = DEFAULT_REQUEST_OPTIONS;

  it("drops stream_options when a streamed request is refused for it", () => {
    expect(withoutRefused(start, "Unrecognized request argument supplied: stream_options", true)).toEqual({
      streamUsage: false,
      lengthField: "max_tokens",
    });
    expect(
      withoutRefused(start, "1 validation error: stream_options Extra inputs are not permitted", true)?.streamUsage,
    ).toBe(false);
  });

  it("moves the answer limit to max_completion_tokens when told to, and drops it when that is refused too", () => {
    const moved = withoutRefused(
      start,
      "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
      false,
    );
    expect(moved).toEqual({ streamUsage: true, lengthField: "max_completion_tokens" });
    expect(
      withoutRefused(moved ?? start, "Unrecognized request argument supplied: max_completion_tokens", false),
    ).toEqual({
      streamUsage: true,
      lengthField: undefined,
    });
  });

  it("leaves refusals about anything else alone", () => {
    for (const message of [
      "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens",
      "'max_tokens' or 'max_completion_tokens' is too large: 4096. This model's maximum context length is 8192 tokens",
      "Unexpected empty grammar stack after accepting piece",
      "Unrecognized request argument supplied: stream_options",
    ]) {
      expect(withoutRefused(start, message, false)).toBeUndefined();
    }
    expect(withoutRefused({ streamUsage: false }, "unknown field stream_options", true)).toBeUndefined();
  });
});
