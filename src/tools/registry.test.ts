import { describe, expect, it, onTestFinished } from "vitest";
import { tempHome, testApp } from "../../test/helpers/app.js";
import { toolContext } from "../../test/helpers/tools.js";
import { ToolRegistry } from "./registry.js";
import { SchemaCompiler } from "./schema-compiler.js";
import type { Tool, ToolParameters } from "./tool.js";

const ctx = toolContext("x", "/tmp");

const tool = (name: string, parameters: ToolParameters): Tool => ({
  name,
  description: name,
  parameters,
  execute: async (args) => `${name} got ${JSON.stringify(args)}`,
});

const wantsText: ToolParameters = {
  type: "object",
  properties: { text: { type: "string" } },
  required: ["text"],
  additionalProperties: false,
};
// Not JSON Schema: ajv refuses to compile it.
const broken = { type: "object", properties: { text: { type: "words" } } } as unknown as ToolParameters;

describe("argument schemas, compiled when first needed", () => {
  it("checks arguments on the first call, in the registry and in its views alike", async () => {
    const registry = new ToolRegistry().register(tool("echo", wantsText));
    const view = registry.restricted(() => true);
    expect(await view.execute("echo", '{"text": 5}', ctx)).toBe(
      "Error: invalid arguments for echo: text must be string.",
    );
    expect(await registry.execute("echo", '{"text": "hi"}', ctx)).toBe('echo got {"text":"hi"}');
    expect(await registry.execute("echo", "{}", ctx)).toBe(
      "Error: invalid arguments for echo: arguments must have required property 'text'.",
    );
  });

  it("a schema that cannot compile is an Error for that tool's calls, or refused at registration when asked", async () => {
    const registry = new ToolRegistry().register(tool("odd", broken)).register(tool("echo", wantsText));
    expect(await registry.execute("odd", '{"text": "hi"}', ctx)).toMatch(
      /^Error: odd cannot check its arguments \(.*schema is invalid/,
    );
    expect(await registry.execute("echo", '{"text": "hi"}', ctx)).toBe('echo got {"text":"hi"}');
    expect(() => registry.register(tool("odd2", broken), { compileNow: true })).toThrow();
    expect(registry.get("odd2")).toBeUndefined();
  });

  it("matches `pattern`s with RE2: each its own, no backtracking, lookaround refused at registration", async () => {
    const patterned = (patterns: Record<string, string>): ToolParameters => ({
      type: "object",
      properties: Object.fromEntries(Object.entries(patterns).map(([k, pattern]) => [k, { type: "string", pattern }])),
    });
    const registry = new ToolRegistry().register(tool("p", patterned({ a: "^(a+)+$", b: "^\\d{3}$" })), {
      compileNow: true,
    });
    expect(await registry.execute("p", JSON.stringify({ a: "aaaa", b: "123" }), ctx)).toMatch(/^p got/);
    expect(await registry.execute("p", JSON.stringify({ a: `${"a".repeat(5000)}!`, b: "12x" }), ctx)).toBe(
      'Error: invalid arguments for p: a must match pattern "^(a+)+$"; b must match pattern "^\\d{3}$".',
    );
    expect(() => registry.register(tool("q", patterned({ a: "(?=a)b" })), { compileNow: true })).toThrow(/Perl/);
    expect(registry.get("q")).toBeUndefined();
  });

  it("bounds a pattern's cost: a text too long for its pattern does not match, too complex a schema is refused", async () => {
    const wants = (pattern: string): ToolParameters => ({
      type: "object",
      properties: { text: { type: "string", pattern } },
    });
    const registry = new ToolRegistry().register(tool("big", wants("[a-z]{1000}".repeat(3))), { compileNow: true });
    expect(await registry.execute("big", JSON.stringify({ text: "a".repeat(3000) }), ctx)).toMatch(/^big got/);
    expect(await registry.execute("big", JSON.stringify({ text: "a".repeat(100_000) }), ctx)).toMatch(
      /^Error: invalid arguments for big: text must match pattern/,
    );
    expect(() => registry.register(tool("huge", wants("[a-z]{1000}".repeat(21))), { compileNow: true })).toThrow(
      "its patterns are too complex to check",
    );
  });

  it("refuses a schema whose $refs expand past the budget (an allOf bomb), keeps recursive and reused ones", async () => {
    const defs: Record<string, unknown> = { d30: { type: "string" } };
    for (let i = 0; i < 30; i++)
      defs[`d${i}`] = { allOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
    const bomb = { type: "object", properties: { x: { $ref: "#/$defs/d0" } }, $defs: defs } as ToolParameters;
    const registry = new ToolRegistry();
    expect(() => registry.register(tool("bomb", bomb), { compileNow: true })).toThrow("too large to check");
    const elsewhere = { type: "object", properties: { x: { $ref: "https://example.com/s.json" } } } as ToolParameters;
    expect(() => registry.register(tool("far", elsewhere), { compileNow: true })).toThrow("not a #/… pointer");
    const tree = {
      type: "object",
      properties: { root: { $ref: "#/$defs/node" }, other: { $ref: "#/$defs/node" } },
      $defs: { node: { type: "object", properties: { children: { type: "array", items: { $ref: "#/$defs/node" } } } } },
    } as ToolParameters;
    registry.register(tool("tree", tree), { compileNow: true });
    const deep = { children: [{ children: [{ children: [] }] }] };
    expect(await registry.execute("tree", JSON.stringify({ root: deep }), ctx)).toMatch(/^tree got/);
    expect(await registry.execute("tree", JSON.stringify({ root: { children: [1] } }), ctx)).toMatch(/^Error: invalid/);
    // Arguments nested deeper than the check's recursion can go are an Error for the model, not a failed turn.
    const nested = `{"root":${'{"children":['.repeat(20_000)}{}${"]}".repeat(20_000)}}`;
    expect(await registry.execute("tree", nested, ctx)).toMatch(/^Error: the arguments for tree could not be checked/);
  });

  it("checks uniqueItems as JSON Schema defines it (key order aside), in a set rather than pair by pair", async () => {
    const registry = new ToolRegistry().register(
      tool("u", { type: "object", properties: { x: { type: "array", uniqueItems: true } } }),
    );
    const call = (x: unknown) => registry.execute("u", JSON.stringify({ x }), ctx);
    const duplicate = "Error: invalid arguments for u: x must not have duplicate items.";
    expect(
      await call([
        { a: 1, b: [2] },
        { b: [2], a: 1 },
      ]),
    ).toBe(duplicate);
    expect(await call([1, 1.0])).toBe(duplicate);
    expect(await call([1, "1", [1], { 1: 1 }, null, true, "true"])).toMatch(/^u got/);
    expect(await call(Array.from({ length: 50_000 }, (_, i) => ({ item: i })))).toMatch(/^u got/);
  });

  it("every built-in tool's schema compiles", async () => {
    const app = await testApp("http://127.0.0.1:9/v1", tempHome());
    onTestFinished(() => app.stop());
    const compiler = new SchemaCompiler();
    expect(app.registry.names.length).toBeGreaterThan(5);
    for (const name of app.registry.names) {
      const parameters = app.registry.get(name)?.parameters as ToolParameters;
      expect(() => compiler.compile(parameters), name).not.toThrow();
    }
  });
});

describe("calls in shapes the types do not allow (straight from a model)", () => {
  it("a missing or null name, or object arguments, are an Error or run; nothing throws", async () => {
    const registry = new ToolRegistry().register(tool("echo", wantsText));
    for (const name of [undefined, null, "", "  "]) {
      expect(await registry.execute(name as unknown as string, "{}", ctx)).toBe(
        "Error: the tool call names no tool. Available tools: echo.",
      );
    }
    expect(await registry.execute("echo", { text: "hi" } as unknown as string, ctx)).toBe('echo got {"text":"hi"}');
    expect(await registry.execute("ECHOO", "{}", ctx)).toBe('Error: unknown tool "ECHOO". Did you mean: echo?');
  });
});

describe("the tools offered", () => {
  it("keep one order and the same schema objects, whatever order MCP servers connect and reconnect in", () => {
    const registry = new ToolRegistry().register(tool("read_file", wantsText)).register(tool("exec", wantsText));
    registry.register(tool("mcp_zeta_go", wantsText)).register(tool("mcp_alpha_x", wantsText));
    const names = () => registry.toSchemas().map((s) => s.function.name);
    expect(names()).toEqual(["read_file", "exec", "mcp_alpha_x", "mcp_zeta_go"]);
    const before = JSON.stringify(registry.toSchemas());
    // A reconnect registers the server's tools anew, last in the map.
    registry.unregister("mcp_alpha_x");
    registry.register(tool("mcp_alpha_x", wantsText));
    expect(names()).toEqual(["read_file", "exec", "mcp_alpha_x", "mcp_zeta_go"]);
    expect(JSON.stringify(registry.toSchemas())).toBe(before);
  });
});
