import { pino } from "pino";
import { beforeEach, describe, expect, it } from "vitest";
import { runAgentLoop } from "../src/agent/loop.js";
import { createOpenAIModel } from "../src/llm/model.js";
import { createTokenCounter } from "../src/llm/tokens.js";
import type { StoredMessage } from "../src/store/store.js";
import { ToolRegistry } from "../src/tools/registry.js";
import type { FakeReply } from "./fakes/openai-server.js";
import { fakeModelForFile } from "./helpers/model.js";
import { toolContext } from "./helpers/tools.js";

// Hostile and broken model replies, through the real openai client over HTTP (plain and streamed).
const log = pino({ level: "silent" });
const fake = fakeModelForFile();
let ran: string[];
let registry: ToolRegistry;

beforeEach(() => {
  ran = [];
  fake.clearQueue();
  fake.respond(() => ({ content: "ok" }));
  const tool = (name: string, readOnly: boolean) => ({
    name,
    description: `records ${name}`,
    parameters: { type: "object" as const, properties: { path: { type: "string" } } },
    readOnly,
    async execute(args: Record<string, unknown>) {
      ran.push(`${name} ${JSON.stringify(args)}`);
      return `${name} done`;
    },
  });
  registry = new ToolRegistry(5).register(tool("read_file", true)).register(tool("write_file", false));
});

function run(
  stream: boolean,
  options: { system?: string; window?: number; tokens?: ReturnType<typeof createTokenCounter> } = {},
) {
  const model = createOpenAIModel({
    apiKey: "k",
    baseUrl: fake.url,
    model: "m",
    timeoutSeconds: 10,
    retries: 0,
    stream,
  });
  return runAgentLoop(
    {
      model,
      registry,
      log,
      maxIterations: 5,
      tokens: options.tokens,
      window: options.window ? () => options.window as number : undefined,
    },
    {
      system: options.system ?? "you are a test",
      history: [],
      user: { role: "user", content: "go" },
      toolContext: toolContext("attacks", "/tmp"),
    },
  );
}

const calls = (produced: StoredMessage[]) => produced.flatMap((m) => m.toolCalls ?? []);

describe.each([false, true])("hostile model replies (stream: %s)", (stream) => {
  it("runs at most 64 of 10,000 tool calls in one reply, each answered, the rest not run nor stored but named in one Error: line", async () => {
    const many = Array.from({ length: 10_000 }, (_, i) => ({ name: "read_file", arguments: { path: `f${i}` } }));
    fake.enqueue({ toolCalls: many }, { content: "done" });
    const result = await run(stream);
    expect(result.reply).toBe("done");
    expect(ran).toHaveLength(64);
    expect(ran[0]).toBe('read_file {"path":"f0"}');
    expect(calls(result.produced)).toHaveLength(64);
    const next = fake.requests[1].messages;
    expect(next.filter((m) => m.role === "tool")).toHaveLength(64);
    expect(JSON.stringify(next)).not.toContain('"f64');
    expect(next.at(-1)).toEqual({
      role: "user",
      content:
        "Error: your last reply also contained 9936 tool calls beyond the 64 one reply may make; those were not run.",
    });
  });

  it("never runs a text call naming __proto__, constructor or toString, nor one nested in another's tags", async () => {
    fake.enqueue(
      {
        content:
          '<tool_call>{"name": "__proto__", "arguments": {}}</tool_call><tool_call>{"name": "constructor", "arguments": {}}</tool_call>' +
          '<tool_call>{"name": "toString"}</tool_call><tool_call><tool_call>{"name": "read_file", "arguments": {"path": "nested"}}</tool_call></tool_call>',
      },
      { content: "no tools then" },
    );
    const result = await run(stream);
    expect(ran).toEqual([]);
    expect(result.reply).toBe("no tools then");
    expect(JSON.stringify(fake.requests[1].messages)).toContain('\\"__proto__\\", which is not one of your tools');
    expect(JSON.stringify(result.produced)).not.toContain("tool_call>");
  });

  it("answers API calls to __proto__ and constructor with an error and goes on", async () => {
    fake.enqueue(
      {
        toolCalls: [
          { name: "__proto__", arguments: {} },
          { name: "constructor", arguments: "{}" },
        ],
      },
      { content: "sorry" },
    );
    const result = await run(stream);
    expect(ran).toEqual([]);
    expect(result.reply).toBe("sorry");
    const results = fake.requests[1].messages.filter((m) => m.role === "tool").map((m) => String(m.content));
    expect(results).toEqual([
      expect.stringContaining('unknown tool "__proto__"'),
      expect.stringContaining('unknown tool "constructor"'),
    ]);
  });

  it("never runs arguments that are JSON but not an object, and keeps `{}` in their place for the server", async () => {
    fake.enqueue(
      {
        toolCalls: [
          { name: "read_file", arguments: "5" },
          { name: "read_file", arguments: "[1,2]" },
          { name: "read_file", arguments: '"a string"' },
          { name: "read_file", arguments: "null" },
        ],
      },
      { content: "hm" },
    );
    const result = await run(stream);
    expect(result.reply).toBe("hm");
    expect(ran.filter((r) => r !== "read_file {}")).toEqual([]);
    for (const call of fake.requests[1].messages.flatMap(
      (m) => (m.tool_calls ?? []) as Array<{ function: { arguments: string } }>,
    )) {
      expect(call.function.arguments).toBe("{}");
    }
  });

  it("hides a <think> never closed over megabytes, and stays fast", async () => {
    // Streamed in the fake's 5-character pieces, 3 MB would be 600,000 events: the plain reply carries the size.
    fake.enqueue({ content: `<think>${"mull it over <think> ".repeat(stream ? 10_000 : 150_000)}` });
    const started = performance.now();
    const result = await run(stream);
    expect(result.reply).toBe("");
    expect(JSON.stringify(result.produced)).not.toContain("mull");
    expect(performance.now() - started).toBeLessThan(20_000);
  });

  it("tells the user an answer the endpoint withheld (content_filter), empty or cut", async () => {
    fake.enqueue({ content: "", finishReason: "content_filter" });
    const empty = await run(stream);
    expect(empty.reply).toMatch(/withheld/);
    fake.enqueue({ content: "The first half", finishReason: "content_filter" });
    const cut = await run(stream);
    expect(cut.reply).toMatch(/^The first half\n\n\[.*withheld/);
  });

  it("takes undocumented finish reasons as the end of the answer: tool_calls without calls, eos", async () => {
    fake.enqueue({ content: "one", finishReason: "tool_calls" });
    expect((await run(stream)).reply).toBe("one");
    fake.enqueue({ content: "two", finishReason: "eos" });
    expect((await run(stream)).reply).toBe("two");
  });

  it("keeps the counter sane when usage is absurd or negative: the next request still fits a small window", async () => {
    const tokens = createTokenCounter();
    const system = "Rules of the house. ".repeat(300);
    fake.enqueue(
      { toolCalls: [{ name: "read_file", arguments: {} }], usage: { prompt_tokens: 1e12, completion_tokens: -3 } },
      { toolCalls: [{ name: "read_file", arguments: {} }], usage: { prompt_tokens: -50, completion_tokens: 1e15 } },
      { content: "fits" },
    );
    const result = await run(stream, { system, window: 4096, tokens });
    expect(result.reply).toBe("fits");
    expect(tokens.factor).toBe(1);
  });
});

describe("hostile streams (raw server-sent events)", () => {
  const event = (delta: object, finish: string | null = null) =>
    `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 0, model: "m", choices: [{ index: 0, delta, finish_reason: finish }] })}`;

  it("reads comments, unknown fields, CRLF and a UTF-8 character split across writes", async () => {
    const smile = Buffer.from(`${event({ content: "héllo 😀 wörld" })}\r\n\r\n`);
    const cut = smile.indexOf(Buffer.from("😀")) + 2;
    fake.enqueue({
      sse: [
        ": keep-alive comment\n\n",
        "garbage line without a field\n",
        `${event({ role: "assistant", content: "" })}\r\n\r\n`,
        smile.subarray(0, cut),
        smile.subarray(cut),
        `${event({}, "stop")}\n\n`,
        "data: [DONE]\n\n",
      ],
    });
    expect((await run(true)).reply).toBe("héllo 😀 wörld");
  });

  it("ends the answer at a [DONE] in the middle of the stream", async () => {
    fake.enqueue({
      sse: [`${event({ content: "before" })}\n\n`, "data: [DONE]\n\n", `${event({ content: " after" })}\n\n`],
    });
    expect((await run(true)).reply).toBe("before");
  });

  it("fails a stream with no choices at all as a model error, as a plain reply without them", async () => {
    fake.enqueue({
      sse: [
        `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", choices: [] })}\n\n`,
        "data: [DONE]\n\n",
      ],
    });
    await expect(run(true)).rejects.toThrow(/no choices/);
  });

  it("fails a stream that closes mid-reply as a model error, never as a half answer", async () => {
    fake.enqueue({ sse: [`${event({ content: "half an ans" })}\n\n`, "CLOSE"] });
    await expect(run(true)).rejects.toThrow();
    expect(ran).toEqual([]);
  });
});

// A plain reply's `choices: []` is no answer at all: an error the worker can retry, not silence.
describe("a plain reply without choices", () => {
  it("is a model error", async () => {
    fake.enqueue({ body: { id: "x", object: "chat.completion", choices: [] } } satisfies FakeReply);
    await expect(run(false)).rejects.toThrow(/no choices/);
  });
});
