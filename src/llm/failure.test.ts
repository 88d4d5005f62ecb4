import { describe, expect, it } from "vitest";
import { describeFailure, isAwayFailure, isPermanentFailure } from "./failure.js";

describe("isPermanentFailure", () => {
  it("counts every 4xx but 408 and 429 as permanent", () => {
    for (const status of [400, 401, 403, 404, 413, 422]) expect(isPermanentFailure(status, "x")).toBe(true);
    expect(isPermanentFailure(408, "timeout")).toBe(false);
    expect(isPermanentFailure(429, "slow down, invalid rate")).toBe(false);
  });

  it("counts a 5xx as permanent only when its text blames the request", () => {
    const permanent = [
      'Unexpected empty grammar stack after accepting piece: {"',
      "tools param requires --jinja flag",
      "Failed to parse tool call arguments as JSON",
      "the request exceeds the available context size, try increasing it",
      "Error rendering prompt with jinja template",
      "Invalid 'messages': expected an array",
    ];
    for (const text of permanent) expect(isPermanentFailure(500, text)).toBe(true);
    expect(isPermanentFailure(500, "Internal Server Error")).toBe(false);
    expect(isPermanentFailure(500, "")).toBe(false);
    // A gateway or an overloaded server says nothing about the request, whatever its page says.
    expect(isPermanentFailure(502, "invalid response from upstream")).toBe(false);
    expect(isPermanentFailure(503, "Loading model")).toBe(false);
    expect(isPermanentFailure(undefined, "parse")).toBe(false);
  });
});

describe("isAwayFailure", () => {
  it("tells an endpoint that is not there from one that answers with an error", () => {
    for (const status of [undefined, 408, 429, 502, 503, 504]) expect(isAwayFailure(status)).toBe(true);
    for (const status of [400, 500, 501, 507]) expect(isAwayFailure(status)).toBe(false);
  });
});

describe("describeFailure", () => {
  it("says the status once and the server's sentence", () => {
    expect(describeFailure(500, "500 Internal Server Error")).toBe(
      "the model endpoint answered 500: Internal Server Error",
    );
    expect(describeFailure(503, "")).toBe("the model endpoint answered 503");
  });

  it("never shows grammar internals, and names the fix where one is known", () => {
    const grammar = describeFailure(500, 'Unexpected empty grammar stack after accepting piece: {"path": "notes.txt",');
    expect(grammar).toBe("the model endpoint failed while the model was writing a tool call (500)");
    expect(describeFailure(500, "tools param requires --jinja flag")).toMatch(/llama-server needs --jinja/);
    expect(describeFailure(500, 'Failed to parse input at pos 7: <tool_call>{"name": "exec", "arg')).toBe(
      "the model endpoint could not read what the model wrote (500)",
    );
    expect(describeFailure(400, "could not parse the JSON body")).toBe(
      "the model endpoint answered 400: could not parse the JSON body",
    );
    expect(describeFailure(400, "the request exceeds the available context size (n_ctx 2048)")).toMatch(
      /larger than the model endpoint's context window \(400\); \/new/,
    );
  });

  it("keeps a long or multi-line text to one short line", () => {
    const text = describeFailure(500, `boom\n${"x".repeat(500)}`);
    expect(text).not.toContain("\n");
    expect(text.length).toBeLessThan(260);
  });
});
