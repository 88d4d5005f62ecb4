import { describe, expect, it } from "vitest";
import { collectStream, fromCompletion, usageOf, visibleSoFar } from "./collect.js";

async function* from(chunks: unknown[]) {
  yield* chunks;
}
const delta = (d: object, finish: string | null = null) => ({
  choices: [{ index: 0, delta: d, finish_reason: finish }],
});

async function collected(chunks: AsyncIterable<unknown>) {
  const result = await collectStream(chunks);
  if (!result) throw new Error("no choice collected");
  return result;
}

describe("collectStream", () => {
  it("collects nothing from a stream without a choice (a usage chunk, empty choices)", async () => {
    expect(
      await collectStream(from([{ choices: [] }, { choices: [], usage: { prompt_tokens: 5 } }, null])),
    ).toBeUndefined();
  });

  it("glues content and indexed tool-call pieces, keeps the last finish reason and the usage chunk", async () => {
    const { raw, usage } = await collected(
      from([
        delta({ role: "assistant", content: "" }),
        delta({ content: "<thi" }),
        delta({ content: "nk>x</th", reasoning_content: "ignored" }),
        delta({ content: "ink>Hi" }),
        delta({ tool_calls: [{ index: 0, id: "a", function: { name: "exec", arguments: "" } }] }),
        delta({ tool_calls: [{ index: 1, id: "b", function: { name: "read_", arguments: '{"pa' } }] }),
        delta({ tool_calls: [{ index: 1, function: { name: "file", arguments: 'th":1}' } }] }),
        delta({ tool_calls: [{ index: 0, function: { arguments: "{}" } }] }),
        delta({}, "stop"),
        { choices: [], usage: { prompt_tokens: 120, completion_tokens: 9 } },
      ]),
    );
    expect(raw).toEqual({
      content: "<think>x</think>Hi",
      finishReason: "stop",
      toolCalls: [
        { id: "a", name: "exec", arguments: "{}" },
        { id: "b", name: "read_file", arguments: '{"path":1}' },
      ],
    });
    expect(usage).toEqual({ promptTokens: 120, completionTokens: 9 });
  });

  it("copes with pieces without index (by id, else the last call), names sent again, object arguments, no choices", async () => {
    const { raw, usage } = await collected(
      from([
        {},
        null,
        { choices: null },
        delta({ tool_calls: [{ id: "a", function: { name: "exec", arguments: '{"command":' } }] }),
        delta({ tool_calls: [{ function: { name: "exec", arguments: '"ls"}' } }] }),
        delta({ tool_calls: [{ id: "b", function: { name: "read_file", arguments: { path: "x" } } }] }),
        delta({ tool_calls: [{ index: 5, id: "c", function: { name: "exec" } }] }),
        delta({ tool_calls: [{ index: 5, id: "d", function: { name: "exec", arguments: "{}" } }] }),
        delta({ content: { type: "text", text: "!" } }),
      ]),
    );
    expect(raw.toolCalls).toEqual([
      { id: "a", name: "exec", arguments: '{"command":"ls"}' },
      { id: "b", name: "read_file", arguments: '{"path":"x"}' },
      { id: "c", name: "exec", arguments: "" },
      { id: "d", name: "exec", arguments: "{}" },
    ]);
    expect(raw.content).toBe("!");
    expect(raw.finishReason).toBeUndefined();
    expect(usage).toBeUndefined();
  });
});

describe("fromCompletion", () => {
  it("reads a plain completion whatever its shape, and says when there is no choice", () => {
    expect(
      fromCompletion({
        choices: [
          {
            finish_reason: "length",
            message: {
              content: [{ type: "text", text: "x" }],
              tool_calls: [null, { function: { name: "exec", arguments: { a: 1 } } }],
            },
          },
        ],
        usage: { prompt_tokens: 5 },
      }),
    ).toEqual({
      raw: {
        content: [{ type: "text", text: "x" }],
        finishReason: "length",
        toolCalls: [
          { id: undefined, name: undefined, arguments: undefined },
          { id: undefined, name: "exec", arguments: { a: 1 } },
        ],
      },
      usage: { promptTokens: 5, completionTokens: 0 },
    });
    for (const body of [{}, { choices: [] }, { choices: [{}] }, null, "text"])
      expect(fromCompletion(body)).toBeUndefined();
  });

  it("takes only believable usage: absurd counts (negative, strings, NaN, huge) are none, so pincer counts itself", () => {
    expect(usageOf({ prompt_tokens: 10, completion_tokens: 3, prompt_tokens_details: { cached_tokens: 4 } })).toEqual({
      promptTokens: 10,
      completionTokens: 3,
      cachedTokens: 4,
    });
    // More cached than prompt tokens is cut to the prompt's; a cache count that makes no sense is left out.
    expect(usageOf({ prompt_tokens: 10, completion_tokens: 3, prompt_tokens_details: { cached_tokens: 99 } })).toEqual({
      promptTokens: 10,
      completionTokens: 3,
      cachedTokens: 10,
    });
    expect(usageOf({ prompt_tokens: 10, completion_tokens: 3, prompt_tokens_details: { cached_tokens: "4" } })).toEqual(
      {
        promptTokens: 10,
        completionTokens: 3,
      },
    );
    for (const bad of [-1, "12", Number.NaN, Number.POSITIVE_INFINITY, 1e300, 2.5, null]) {
      expect(usageOf({ prompt_tokens: bad, completion_tokens: 3 })).toBeUndefined();
      expect(usageOf({ prompt_tokens: 10, completion_tokens: bad })).toBeUndefined();
    }
    expect(usageOf("lots")).toBeUndefined();
  });

  it("reads the cached share wherever the server puts it, 0 included, and none where it says nothing", () => {
    const usage = { prompt_tokens: 100, completion_tokens: 3 };
    const counted = (cachedTokens?: number) => ({
      promptTokens: 100,
      completionTokens: 3,
      ...(cachedTokens === undefined ? {} : { cachedTokens }),
    });
    expect(usageOf({ ...usage, prompt_tokens_details: { cached_tokens: 0 } })).toEqual(counted(0));
    expect(usageOf({ ...usage, cache_read_input_tokens: 80 })).toEqual(counted(80));
    expect(usageOf(usage, { cache_n: 96, prompt_n: 4 })).toEqual(counted(96));
    expect(usageOf({ ...usage, prompt_tokens_details: { cached_tokens: 90 } }, { cache_n: 96 })).toEqual(counted(90));
    expect(usageOf(usage, { cache_n: -5 })).toEqual(counted());
    expect(usageOf(usage)).toEqual(counted());
    // llama-server's last chunk of a stream carries both.
    const chunk = { choices: [], usage: { ...usage }, timings: { cache_n: 70, prompt_n: 30 } };
    const fromStream = async () => {
      async function* chunks() {
        yield { choices: [{ delta: { content: "hi" }, finish_reason: "stop" }] };
        yield chunk;
      }
      return (await collectStream(chunks()))?.usage;
    };
    return fromStream().then((read) => expect(read).toEqual(counted(70)));
  });
});

describe("onText and visibleSoFar", () => {
  it("hears the text so far after every chunk that adds to it, and only then", async () => {
    const heard: string[] = [];
    await collectStream(
      from([
        delta({ role: "assistant", content: "" }),
        delta({ content: "Hel" }),
        delta({ reasoning_content: "hmm" }),
        delta({ content: "lo" }),
        delta({ tool_calls: [{ index: 0, id: "a", function: { name: "exec", arguments: "{}" } }] }),
        delta({}, "stop"),
      ]),
      (text) => heard.push(text),
    );
    expect(heard).toEqual(["Hel", "Hello"]);
  });

  it("shows no reasoning, no tool-call markup, no bare JSON call and no half-written tag", () => {
    expect(visibleSoFar("<think>let me see")).toBe("");
    expect(visibleSoFar("<think>a</think>The answer")).toBe("The answer");
    expect(visibleSoFar('Checking.<tool_call>{"name"')).toBe("Checking.");
    expect(visibleSoFar("Checking. [TOOL_CALLS][{")).toBe("Checking.");
    expect(visibleSoFar('{"name": "exec"')).toBe("");
    expect(visibleSoFar("Sure <thi")).toBe("Sure");
    expect(visibleSoFar("Sure [TOOL_CA")).toBe("Sure");
    expect(visibleSoFar("a < b and [x](y)")).toBe("a < b and [x](y)");
  });
});
