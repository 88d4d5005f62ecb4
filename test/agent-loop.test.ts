import { pino } from "pino";
import { beforeEach, describe, expect, it } from "vitest";
import { runAgentLoop } from "../src/agent/loop.js";
import type { InboundMessage } from "../src/bus/types.js";
import { createOpenAIModel } from "../src/llm/model.js";
import { ToolRegistry } from "../src/tools/registry.js";
import { ToolError } from "../src/tools/tool.js";
import { testBus } from "./helpers/bus.js";
import { fakeModelForFile } from "./helpers/model.js";
import { overlaps, type Span, sleepyTool } from "./helpers/tools.js";

const log = pino({ level: "silent" });
const inbound: InboundMessage = {
  id: "1",
  channel: "console",
  chatId: "local",
  senderId: "u",
  senderName: "u",
  text: "hi",
  media: [],
  isGroup: false,
  mentionsBot: true,
  receivedAt: 0,
  sessionKey: "console:local",
};

const fake = fakeModelForFile();
let spans: Span[];
let registry: ToolRegistry;

beforeEach(() => {
  spans = [];
  registry = new ToolRegistry(1)
    .register(sleepyTool("read_a", { readOnly: true }, spans))
    .register(sleepyTool("read_b", { readOnly: true }, spans))
    .register(sleepyTool("write_x", {}, spans))
    .register(sleepyTool("exec_y", {}, spans))
    .register({
      name: "explode",
      description: "always fails",
      parameters: { type: "object", properties: {} },
      async execute() {
        throw new Error("kaboom");
      },
    })
    .register({
      name: "refuse",
      description: "fails politely",
      parameters: { type: "object", properties: {} },
      async execute() {
        throw new ToolError("that file is outside the workspace");
      },
    })
    .register({
      name: "hang",
      description: "never returns",
      parameters: { type: "object", properties: {} },
      timeoutSeconds: 0.2,
      execute: () => new Promise<string>(() => {}),
    });
});

function run(options: { stream?: boolean; maxIterations?: number } = {}) {
  const model = createOpenAIModel({
    apiKey: "test",
    baseUrl: fake.url,
    model: "fake",
    timeoutSeconds: 10,
    retries: 0,
    stream: options.stream ?? false,
  });
  return runAgentLoop(
    { model, registry, log, maxIterations: options.maxIterations ?? 40 },
    {
      system: "you are a test",
      history: [],
      user: { role: "user", content: "go" },
      toolContext: {
        sessionKey: "console:local",
        inbound,
        workspace: "/tmp",
        seesOwnerMemory: true,
        signal: new AbortController().signal,
        bus: testBus(),
        log,
      },
    },
  );
}

/** The tool results the model was sent in its n-th request, by tool_call_id order. */
function toolResults(request: number): string[] {
  return fake.requests[request].messages.filter((m) => m.role === "tool").map((m) => String(m.content));
}

describe.each([false, true])("agent loop (stream: %s)", (stream) => {
  it("answers without tools in one call, offering every tool", async () => {
    fake.enqueue({ content: "hello there" });
    const result = await run({ stream });
    expect(result.reply).toBe("hello there");
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0].stream ?? false).toBe(stream);
    expect(fake.requests[0].tools?.map((t) => t.function.name)).toContain("read_a");
  });

  it("runs consecutive read-only calls together and everything else alone, results in call order", async () => {
    fake.enqueue(
      {
        toolCalls: [
          { name: "read_a", arguments: { value: "1" } },
          { name: "read_b", arguments: { value: "2" } },
          { name: "write_x", arguments: { value: "3" } },
          { name: "read_a", arguments: { value: "4" } },
          { name: "exec_y", arguments: { value: "5" } },
          { name: "read_b", arguments: { value: "6" } },
          { name: "read_a", arguments: { value: "7" } },
        ],
      },
      { content: "done" },
    );
    const result = await run({ stream });
    expect(result.reply).toBe("done");
    const span = (name: string) => spans.find((s) => s.name === name) as Span;
    expect(overlaps(span("read_a:1"), span("read_b:2"))).toBe(true);
    expect(overlaps(span("read_b:6"), span("read_a:7"))).toBe(true);
    for (const alone of ["write_x:3", "exec_y:5"]) {
      for (const other of spans.filter((s) => s.name !== alone)) expect(overlaps(span(alone), other)).toBe(false);
    }
    expect(span("write_x:3").start).toBeGreaterThanOrEqual(span("read_b:2").end);
    expect(span("read_a:4").start).toBeGreaterThanOrEqual(span("write_x:3").end);
    expect(toolResults(1)).toEqual([
      "read_a got 1",
      "read_b got 2",
      "write_x got 3",
      "read_a got 4",
      "exec_y got 5",
      "read_b got 6",
      "read_a got 7",
    ]);
    expect(result.produced.map((m) => m.role)).toEqual(["assistant", ...Array(7).fill("tool"), "assistant"]);
  });

  it("turns bad arguments, unknown tools, failures and timeouts into Error results and keeps going", async () => {
    fake.enqueue(
      {
        toolCalls: [
          { name: "read_a", arguments: { value: 42 } },
          { name: "read_a", arguments: "{not json" },
          { name: "reed_a", arguments: {} },
          { name: "explode", arguments: {} },
          { name: "refuse", arguments: {} },
          { name: "hang", arguments: {} },
          { name: "read_a", arguments: { value: "ok", extra: true } },
        ],
      },
      { content: "recovered" },
    );
    const result = await run({ stream });
    expect(result.reply).toBe("recovered");
    const [type, json, unknown, thrown, refused, timeout, extra] = toolResults(1);
    expect(type).toBe("Error: invalid arguments for read_a: value must be string.");
    expect(json).toMatch(/^Error: the arguments for read_a are not valid JSON/);
    expect(unknown).toBe('Error: unknown tool "reed_a". Did you mean: read_a, read_b?');
    expect(thrown).toBe("Error: explode failed: kaboom");
    expect(refused).toBe("Error: that file is outside the workspace");
    expect(timeout).toBe("Error: hang timed out after 0.2 s.");
    expect(extra).toBe('Error: invalid arguments for read_a: arguments has an unexpected property "extra".');
  });

  it("stops at the iteration limit with one last call without tools", async () => {
    fake.respond((request) =>
      request.tools ? { toolCalls: [{ name: "read_a", arguments: { value: "again" } }] } : { content: "summary" },
    );
    const result = await run({ stream, maxIterations: 3 });
    fake.respond(() => ({ content: "ok" }));
    expect(result.reply).toBe("summary");
    expect(fake.requests).toHaveLength(4);
    expect(fake.requests[3].tools).toBeUndefined();
    expect(JSON.stringify(fake.requests[3].messages.at(-1))).toMatch(/used all tool calls/);
  });
});

describe("model errors", () => {
  it("surface as ModelError with a short message", async () => {
    fake.enqueue({ status: 503 });
    await expect(run()).rejects.toThrow(/the model endpoint answered 503/);
    fake.enqueue({ status: 401 });
    await expect(run()).rejects.toThrow(/refused the API key/);
  });
});
