import { pino } from "pino";
import { beforeEach, describe, expect, it } from "vitest";
import { runAgentLoop } from "../src/agent/loop.js";
import { TurnMeter } from "../src/agent/turn-stats.js";
import { createOpenAIModel, type Model, ModelError } from "../src/llm/model.js";
import { createTokenCounter } from "../src/llm/tokens.js";
import type { StoredMessage } from "../src/store/store.js";
import { ToolRegistry } from "../src/tools/registry.js";
import type { FakeReply } from "./fakes/openai-server.js";
import { fakeModelForFile } from "./helpers/model.js";
import { toolContext } from "./helpers/tools.js";

// Replies the way real servers send them, through the real openai client over HTTP, plain and streamed.
const log = pino({ level: "silent" });
const fake = fakeModelForFile();
let ran: string[];
let registry: ToolRegistry;

beforeEach(() => {
  ran = [];
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

function model(stream: boolean): Model {
  return createOpenAIModel({ apiKey: "k", baseUrl: fake.url, model: "m", timeoutSeconds: 10, retries: 0, stream });
}

function run(stream: boolean, extra: { window?: number } = {}) {
  return runAgentLoop(
    {
      model: model(stream),
      registry,
      log,
      maxIterations: 20,
      tokens: extra.window ? createTokenCounter() : undefined,
      window: extra.window ? () => extra.window as number : undefined,
    },
    {
      system: "you are a test",
      history: [],
      user: { role: "user", content: "go" },
      toolContext: toolContext("replies", "/tmp"),
    },
  );
}

/** One reply in a raw shape: `message` as the plain body's, and the same as one stream delta. */
function raw(message: Record<string, unknown>, finish: string | null = "stop"): FakeReply {
  const toolCalls = message.tool_calls as Array<Record<string, unknown>> | undefined;
  const delta = { ...message, ...(toolCalls ? { tool_calls: toolCalls.map((c, index) => ({ index, ...c })) } : {}) };
  return {
    body: { choices: [{ index: 0, message: { role: "assistant", ...message }, finish_reason: finish }] },
    chunks: [
      { choices: [{ index: 0, delta, finish_reason: null }] },
      { choices: [{ index: 0, delta: {}, finish_reason: finish }] },
    ],
  };
}

const everything = (produced: StoredMessage[]) => JSON.stringify(produced);
const sent = (request: number) => JSON.stringify(fake.requests[request].messages);

describe.each([false, true])("replies as servers send them (stream: %s)", (stream) => {
  it("runs Hermes/Qwen <tool_call> text calls naming offered tools; the markup reaches neither chat nor history", async () => {
    fake.enqueue(
      { content: 'Looking.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "a.txt"}}\n</tool_call>' },
      { content: "It says hi." },
    );
    const result = await run(stream);
    expect(ran).toEqual(['read_file {"path":"a.txt"}']);
    expect(result.reply).toBe("It says hi.");
    expect(everything(result.produced)).not.toContain("<tool_call>");
    expect(sent(1)).not.toContain("<tool_call>");
    expect(result.produced[0]).toMatchObject({ content: "Looking.", toolCalls: [{ name: "read_file" }] });
  });

  it("runs Mistral's [TOOL_CALLS] forms and a bare JSON call, and leaves JSON naming no offered tool as text", async () => {
    fake.enqueue(
      { content: '[TOOL_CALLS][{"name": "read_file", "arguments": {"path": "1"}}]' },
      { content: '[TOOL_CALLS]read_file[ARGS]{"path": "2"}' },
      { content: '{"name": "read_file", "arguments": {"path": "3"}}' },
      { content: '{"name": "weather", "arguments": {"city": "Oslo"}}' },
    );
    const result = await run(stream);
    expect(ran).toEqual(['read_file {"path":"1"}', 'read_file {"path":"2"}', 'read_file {"path":"3"}']);
    expect(result.reply).toBe('{"name": "weather", "arguments": {"city": "Oslo"}}');
    expect(everything(result.produced)).not.toContain("TOOL_CALLS");
  });

  it("asks once again when a reply's only call names a tool not offered, and never runs it", async () => {
    fake.enqueue(
      { content: '<tool_call>{"name": "delete_all", "arguments": {}}</tool_call>' },
      { content: "I cannot do that." },
    );
    const result = await run(stream);
    expect(ran).toEqual([]);
    expect(result.reply).toBe("I cannot do that.");
    expect(sent(1)).toContain('a tool call to \\"delete_all\\", which is not one of your tools');
    expect(sent(1)).not.toContain("<tool_call>");
    expect(everything(result.produced)).not.toContain("delete_all");
  });

  it("never shows or stores thinking: <think> blocks, a lone </think>, reasoning_content", async () => {
    fake.enqueue(
      {
        content: '<think>The user wants a file.</think>\n<tool_call>{"name": "read_file", "arguments": {}}</tool_call>',
        reasoning: "secret plan",
      },
      { content: "still pondering</think>\n\nHere it is." },
    );
    const result = await run(stream);
    expect(ran).toEqual(["read_file {}"]);
    expect(result.reply).toBe("Here it is.");
    const all = everything(result.produced) + sent(1);
    for (const thought of ["The user wants", "pondering", "secret plan", "think>"]) expect(all).not.toContain(thought);
  });

  it("shows a reply cut while thinking as cut, with none of the thinking", async () => {
    fake.enqueue({ content: "<think>first I will consider", finishReason: "length" });
    const result = await run(stream);
    expect(result.reply).toBe("[cut off at the length limit before anything was said]");
  });

  it("survives odd shapes: object arguments, content as parts or an object, missing ids, a call without a name", async () => {
    fake.enqueue(
      raw({
        content: null,
        tool_calls: [{ type: "function", function: { name: "read_file", arguments: { path: "obj" } } }],
      }),
      raw({
        content: [
          { type: "text", text: "two " },
          { type: "text", text: "at once" },
        ],
        tool_calls: [
          { function: { name: "read_file", arguments: '{"path":"x"}' } },
          { function: { name: "read_file", arguments: '{"path":"y"}' } },
          { id: "nameless", function: { name: null, arguments: "{}" } },
        ],
      }),
      raw({ content: { type: "text", text: "Done." } }),
    );
    const result = await run(stream);
    expect(ran).toEqual(['read_file {"path":"obj"}', 'read_file {"path":"x"}', 'read_file {"path":"y"}']);
    expect(result.reply).toBe("Done.");
    const ids = result.produced.flatMap((m) => m.toolCalls?.map((c) => c.id) ?? []);
    expect(new Set(ids).size).toBe(3);
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9]{9}$/);
    // Every result answers its own call in the request that follows.
    const toolIds = fake.requests[2].messages.filter((m) => m.role === "tool").map((m) => m.tool_call_id);
    expect(toolIds).toEqual(ids);
    expect(result.produced[2]).toMatchObject({ role: "assistant", content: "two at once" });
  });

  it("asks again when a reply's only call has no name", async () => {
    fake.enqueue(raw({ content: "", tool_calls: [{ id: "a", function: { arguments: "{}" } }] }), { content: "fine" });
    const result = await run(stream);
    expect(result.reply).toBe("fine");
    expect(sent(1)).toContain("a tool call without a tool name");
  });

  it("runs tool calls whatever the finish reason says: stop, or none at all", async () => {
    fake.enqueue(
      { toolCalls: [{ name: "read_file", arguments: { path: "s" } }], finishReason: "stop" },
      { toolCalls: [{ name: "read_file", arguments: { path: "n" } }], finishReason: null },
      { content: "both", finishReason: null },
    );
    const result = await run(stream);
    expect(ran).toEqual(['read_file {"path":"s"}', 'read_file {"path":"n"}']);
    expect(result.reply).toBe("both");
  });

  it("never runs or stores a call cut at the length limit; the model is told and asked again once", async () => {
    fake.enqueue(
      { toolCalls: [{ name: "write_file", arguments: '{"path": "notes.txt",' }], finishReason: "length" },
      { toolCalls: [{ name: "write_file", arguments: { path: "notes.txt" } }] },
      { content: "Saved." },
    );
    const result = await run(stream);
    expect(ran).toEqual(['write_file {"path":"notes.txt"}']);
    expect(result.reply).toBe("Saved.");
    expect(sent(1)).toContain("cut off at the length limit");
    expect(sent(1)).not.toContain('notes.txt\\",');
    expect(everything(result.produced)).not.toContain('"notes.txt",');
    expect(sent(2)).not.toContain("cut off at the length limit");
  });

  it("gives the user the text with a note when the retry is cut too, running nothing", async () => {
    const cut: FakeReply = {
      content: "Writing it",
      toolCalls: [{ name: "write_file", arguments: '{"pa' }],
      finishReason: "length",
    };
    fake.enqueue(cut, cut);
    const result = await run(stream);
    expect(ran).toEqual([]);
    expect(result.reply).toBe("Writing it\n\n[cut off at the length limit while writing a tool call; nothing was run]");
    expect(result.produced).toEqual([{ role: "assistant", content: result.reply }]);
    expect(fake.requests).toHaveLength(2);
  });

  it("marks a text answer cut at the length limit, and sends max_tokens: the answer's reserve of the window", async () => {
    fake.enqueue({ content: "babble babble", finishReason: "length" });
    const result = await run(stream, { window: 8000 });
    expect(result.reply).toBe("babble babble\n\n[cut off at the length limit]");
    expect(fake.requests[0].max_tokens).toBe(2000);
  });

  it("never stores arguments that are not JSON, even when the reply was not cut", async () => {
    fake.enqueue({ toolCalls: [{ name: "read_file", arguments: "{oops" }] }, { content: "sorry" });
    const result = await run(stream);
    expect(ran).toEqual([]);
    expect(result.produced[0].toolCalls?.[0].arguments).toBe("{}");
    expect(sent(1)).not.toContain("{oops");
    expect(String(result.produced[1].content)).toMatch(/not valid JSON/);
  });
});

describe("streamed usage", () => {
  it("asks for include_usage, calibrates the counter on it and puts the counts on the turn's report", async () => {
    fake.enqueue({ content: "hello", usage: { prompt_tokens: 900, completion_tokens: 3 } });
    const tokens = createTokenCounter();
    const meter = new TurnMeter(model(true));
    await runAgentLoop(
      { model: meter.model, registry, log, maxIterations: 3, tokens, window: () => 32_000 },
      {
        system: "you are a test ".repeat(60),
        history: [],
        user: { role: "user", content: "go" },
        toolContext: toolContext("usage", "/tmp"),
      },
    );
    expect(fake.requests[0].stream_options).toEqual({ include_usage: true });
    expect(tokens.factor).toBeGreaterThan(1);
    expect(meter.finish("console:usage", "ok")).toMatchObject({ promptTokens: 900, completionTokens: 3 });
  });

  it("retries once without stream_options when the server refuses it, and does not send it again", async () => {
    fake.respond((request) =>
      request.stream_options
        ? { status: 400, body: { error: { message: "Unrecognized request argument supplied: stream_options" } } }
        : { content: "fine" },
    );
    const streamed = model(true);
    const first = await streamed.complete({ messages: [{ role: "user", content: "a" }] });
    const second = await streamed.complete({ messages: [{ role: "user", content: "b" }] });
    expect([first.content, second.content]).toEqual(["fine", "fine"]);
    expect(fake.requests.map((r) => Boolean(r.stream_options))).toEqual([true, false, false]);
  });

  it("moves the answer limit to max_completion_tokens when the endpoint asks for it", async () => {
    fake.respond((request) =>
      request.max_tokens
        ? {
            status: 400,
            body: {
              error: {
                message:
                  "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
              },
            },
          }
        : { content: String(request.max_completion_tokens) },
    );
    const reply = await model(false).complete({ messages: [{ role: "user", content: "a" }], maxTokens: 77 });
    expect(reply.content).toBe("77");
    expect(fake.requests).toHaveLength(2);
  });

  it("does not retry other refusals", async () => {
    fake.enqueue({ status: 400, body: { error: { message: "Unexpected empty grammar stack after accepting piece" } } });
    await expect(model(true).complete({ messages: [{ role: "user", content: "a" }] })).rejects.toBeInstanceOf(
      ModelError,
    );
    expect(fake.requests).toHaveLength(1);
  });
});

describe("many model calls in one turn", () => {
  it.each([false, true])("print no MaxListenersExceededWarning (stream: %s)", async (stream) => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on("warning", onWarning);
    try {
      for (let i = 0; i < 14; i++) fake.enqueue({ toolCalls: [{ name: "read_file", arguments: { path: String(i) } }] });
      fake.enqueue({ content: "fifteen calls later" });
      const result = await run(stream);
      expect(result.reply).toBe("fifteen calls later");
      expect(fake.requests).toHaveLength(15);
      // Warnings are emitted on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off("warning", onWarning);
    }
    expect(warnings).toEqual([]);
  });
});
