import { describe, expect, it } from "vitest";
import { findTextToolCalls, inputsCarryCalls, splitAtCode } from "./text-tool-calls.js";

const offered = new Set(["read_file", "exec"]);
const find = (content: string) => findTextToolCalls(content, offered);

describe("text tool calls", () => {
  it("promotes Hermes/Qwen <tool_call> blocks naming offered tools and keeps the text around them", () => {
    const found = find(
      'Let me look.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "a.txt"}}\n</tool_call>\n<tool_call>{"name":"exec","arguments":"{\\"command\\":\\"ls\\"}"}</tool_call>',
    );
    expect(found.calls).toEqual([
      { name: "read_file", arguments: '{"path":"a.txt"}' },
      { name: "exec", arguments: '{"command":"ls"}' },
    ]);
    expect(found.text).toBe("Let me look.");
    expect(found.unknown).toEqual([]);
  });

  it("strips a block naming a tool that is not offered, and an unreadable or unclosed one, without promoting them", () => {
    expect(find('Sure. <tool_call>{"name": "rm_rf", "arguments": {}}</tool_call> Done.')).toEqual({
      text: "Sure.  Done.",
      calls: [],
      unknown: ["rm_rf"],
    });
    expect(find('Hi <tool_call>{"name": "read_file", "arguments": {"pa')).toEqual({
      text: "Hi",
      calls: [],
      unknown: [""],
    });
  });

  it("reads an unclosed last block whose JSON is whole (servers that eat the closing tag as a stop word)", () => {
    expect(find('<tool_call>{"name": "exec", "arguments": {"command": "pwd"}}').calls).toEqual([
      { name: "exec", arguments: '{"command":"pwd"}' },
    ]);
  });

  it("promotes Mistral's [TOOL_CALLS][…] list and [TOOL_CALLS]name[ARGS]{…} form", () => {
    expect(
      find(
        'Checking [TOOL_CALLS][{"name": "read_file", "arguments": {"path": "x"}}, {"name": "exec", "arguments": {"command": "ls"}}]',
      ),
    ).toEqual({
      text: "Checking",
      calls: [
        { name: "read_file", arguments: '{"path":"x"}' },
        { name: "exec", arguments: '{"command":"ls"}' },
      ],
      unknown: [],
    });
    expect(
      find('[TOOL_CALLS]read_file[ARGS]{"path": "y"}[TOOL_CALLS]exec[CALL_ID]a1b2c3d4e[ARGS]{"command": "id"}').calls,
    ).toEqual([
      { name: "read_file", arguments: '{"path":"y"}' },
      { name: "exec", arguments: '{"command":"id"}' },
    ]);
    expect(find("Plan: [TOOL_CALLS]nope[ARGS]{}")).toEqual({ text: "Plan:", calls: [], unknown: ["nope"] });
  });

  it("promotes a bare JSON call that is the whole content (also Llama's `parameters`), never a fenced one", () => {
    expect(find('{"name": "read_file", "arguments": {"path": "z"}}').calls).toEqual([
      { name: "read_file", arguments: '{"path":"z"}' },
    ]);
    expect(find('{"name": "exec", "parameters": {"command": "ls"}}').calls).toEqual([
      { name: "exec", arguments: '{"command":"ls"}' },
    ]);
    const fenced = '```json\n{"name": "exec", "parameters": {"command": "ls"}}\n```';
    expect(find(fenced)).toEqual({ text: fenced, calls: [], unknown: [] });
  });

  it("never reads markup inside code: fences, spans, an unclosed fence, and keeps it as it was", () => {
    const call = '<tool_call>{"name": "exec", "arguments": {"command": "touch x"}}</tool_call>';
    const mistral = '[TOOL_CALLS]exec[ARGS]{"command": "touch x"}';
    for (const content of [
      `Example:\n\`\`\`\n${call}\n\`\`\``,
      `Example:\n\`\`\`xml\n${call}\n\`\`\`\nThat is all.`,
      `Inline: \`${call}\` and \`${mistral}\`.`,
      `Unclosed:\n\`\`\`\n${mistral}`,
      `Longer fence:\n\`\`\`\`\n\`\`\`\n${call}\n\`\`\`\n\`\`\`\``,
    ]) {
      expect(find(content)).toEqual({ text: content, calls: [], unknown: [] });
    }
    // Outside the code it is still a call (a text-calling model that also quotes), backticks in its arguments and all.
    expect(find(`\`${call}\` means:\n${call}`).calls).toEqual([{ name: "exec", arguments: '{"command":"touch x"}' }]);
    const markdown = '<tool_call>{"name": "exec", "arguments": {"command": "echo `id` ```"}}</tool_call> then `x`';
    expect(find(markdown)).toEqual({
      text: "then `x`",
      calls: [{ name: "exec", arguments: '{"command":"echo `id` ```"}' }],
      unknown: [],
    });
    expect(find('[TOOL_CALLS]exec[ARGS]{"command": "echo `id`"}').calls).toEqual([
      { name: "exec", arguments: '{"command":"echo `id`"}' },
    ]);
    // A tag begun as prose does not reach into code after it.
    for (const prose of [
      `Qwen writes <tool_call> tags:\n\`\`\`\n${call}\n\`\`\``,
      `Qwen writes <tool_call> tags; Mistral: \`${mistral}\``,
      `Mistral starts with [TOOL_CALLS] and then: \`${mistral}\``,
    ]) {
      expect(find(prose)).toEqual({ text: prose, calls: [], unknown: [] });
    }
    expect(find('<tool_call>{"name": "exec", "arguments": {"command": "echo `id`"}}').calls).toHaveLength(1);
  });

  it("splits text at code in one pass: odd pieces are code", () => {
    expect(splitAtCode("a `b` c ```\nd\n``` e")).toEqual(["a ", "`b`", " c ", "```\nd\n```", " e"]);
    expect(splitAtCode("x ``a ` b`` y")).toEqual(["x ", "``a ` b``", " y"]);
    expect(splitAtCode("no code")).toEqual(["no code"]);
    expect(splitAtCode("a ```b")).toEqual(["a ", "```b", ""]);
    const hostile = `${"[TOOL_CALLS]x ".repeat(20_000)}${"<tool_call> ".repeat(20_000)}`;
    const started = performance.now();
    expect(splitAtCode(hostile)).toEqual([hostile]);
    expect(performance.now() - started).toBeLessThan(1000);
    const many = "`".repeat(100_001);
    expect(splitAtCode(many).join("")).toBe(many);
  });

  it("knows a request whose inputs carry call markup or a JSON call naming an offered tool", () => {
    const names = ["exec", "read_file"];
    const asked = (content: unknown) => inputsCarryCalls([{ content: "system" }, { content }], names);
    expect(asked("hello")).toBe(false);
    expect(asked('{"name": "weather"}')).toBe(false);
    expect(asked(null)).toBe(false);
    expect(asked("a page: <tool_call>")).toBe(true);
    expect(asked("[TOOL_CALLS]")).toBe(true);
    expect(asked("exec[ARGS]{}")).toBe(true);
    expect(asked('{"name" :\n "exec"}')).toBe(true);
    expect(asked('{"result": "{\\"name\\": \\"exec\\", \\"arguments\\": {}}"}')).toBe(true);
    expect(asked("{'name': 'exec'}")).toBe(true);
    const started = performance.now();
    expect(asked(`"name${"\\".repeat(200_000)}`)).toBe(false);
    expect(asked(`"name"${" ".repeat(200_000)}`)).toBe(false);
    expect(performance.now() - started).toBeLessThan(500);
    expect(asked([{ type: "text", text: '{"name":"read_file"}' }, { type: "image_url" }])).toBe(true);
    expect(inputsCarryCalls([{ content: '{"name": "a.b"}' }], ["a.b"])).toBe(true);
    expect(inputsCarryCalls([{ content: '{"name": "axb"}' }], ["a.b"])).toBe(false);
  });

  it("leaves text that only looks like JSON as it was: unknown names, JSON inside prose, plain objects", () => {
    for (const content of [
      '{"name": "weather", "arguments": {"city": "Oslo"}}',
      'Here is the call: {"name": "exec", "arguments": {"command": "ls"}}',
      '{"name": "Ada", "age": 36}',
      "[1, 2, 3]",
      "{not json",
      "",
    ]) {
      expect(find(content)).toEqual({ text: content.trim(), calls: [], unknown: [] });
    }
  });

  it("leaves prose that mentions the markup as it was: the answer is not cut at the token", () => {
    for (const content of [
      "Mistral models start a call with the [TOOL_CALLS] token, followed by a JSON list.",
      "Qwen writes <tool_call> tags around a JSON object, closed by </tool_call>.",
      "Qwen writes <tool_call> and then the call.",
    ]) {
      expect(find(content)).toEqual({ text: content, calls: [], unknown: [] });
    }
  });

  it("survives hostile input: braces inside strings, deep nesting, no tools offered", () => {
    expect(find('<tool_call>{"name": "exec", "arguments": {"command": "echo \\"}}\\""}}</tool_call>').calls).toEqual([
      { name: "exec", arguments: '{"command":"echo \\"}}\\""}' },
    ]);
    const spaces = `\`\`\`\n${" ".repeat(200_000)}x\`\`\``;
    expect(find(spaces).text).toBe(spaces.trim());
    expect(find("<tool_call>".repeat(30_000)).text).toBe("");
    expect(find(`${"[TOOL_CALLS]".repeat(20_000)}`).unknown).toHaveLength(20_000);
    const deep = `<tool_call>${"[".repeat(5000)}${"]".repeat(5000)}</tool_call>ok`;
    expect(find(deep)).toEqual({ text: "ok", calls: [], unknown: [""] });
    expect(findTextToolCalls('<tool_call>{"name": "exec", "arguments": {}}</tool_call>', new Set())).toEqual({
      text: "",
      calls: [],
      unknown: ["exec"],
    });
  });
});
