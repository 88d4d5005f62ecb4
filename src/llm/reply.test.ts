import { describe, expect, it } from "vitest";
import { callId, closesThinkingAlone, normalizeReply, storableArguments, textOf, withoutReasoning } from "./reply.js";

const tools = ["read_file", "exec"];
let n = 0;
const seq = () => `gen${++n}`;
const yes = () => true;

describe("normalizeReply", () => {
  it("keeps a regular reply as it is", () => {
    expect(
      normalizeReply(
        {
          content: "hi",
          toolCalls: [{ id: "c1", name: "exec", arguments: '{"command":"ls"}' }],
          finishReason: "tool_calls",
        },
        tools,
        yes,
      ),
    ).toEqual({
      content: "hi",
      toolCalls: [{ id: "c1", name: "exec", arguments: '{"command":"ls"}' }],
      finishReason: "tool_calls",
    });
  });

  it("asks whether text calls may be read only of a reply whose text has some (the question scans the request)", () => {
    let asked = 0;
    const ask = () => ++asked > 0;
    expect(normalizeReply({ content: " pong ", toolCalls: [] }, tools, ask)).toMatchObject({ content: "pong" });
    expect(asked).toBe(0);
    const call = '<tool_call>{"name":"exec","arguments":{"command":"ls"}}</tool_call>';
    expect(normalizeReply({ content: call, toolCalls: [] }, tools, ask).toolCalls).toHaveLength(1);
    expect(asked).toBe(1);
  });

  it("stringifies object arguments, makes absent ones {}, and gives missing or repeated ids unique new ones", () => {
    n = 0;
    const reply = normalizeReply(
      {
        content: null,
        toolCalls: [
          { name: "exec", arguments: { command: "ls" } },
          { id: "same", name: "read_file", arguments: null },
          { id: "same", name: "read_file" },
          { id: "", name: "exec", arguments: "{}" },
        ],
      },
      tools,
      yes,
      seq,
    );
    expect(reply.toolCalls).toEqual([
      { id: "gen1", name: "exec", arguments: '{"command":"ls"}' },
      { id: "same", name: "read_file", arguments: "{}" },
      { id: "gen2", name: "read_file", arguments: "{}" },
      { id: "gen3", name: "exec", arguments: "{}" },
    ]);
    expect(reply.content).toBe("");
    expect(reply.finishReason).toBeUndefined();
  });

  it("drops calls without a name and says so", () => {
    const reply = normalizeReply(
      { content: "", toolCalls: [{ id: "a", name: null, arguments: "{}" }, { id: "b" }, { id: "c", name: 7 }] },
      tools,
      yes,
    );
    expect(reply.toolCalls).toEqual([]);
    expect(reply.discarded).toEqual(["a tool call without a tool name"]);
  });

  it("takes the text of content given as parts or an object", () => {
    expect(
      normalizeReply({ content: [{ type: "text", text: "a" }, { type: "image_url" }, "b"], toolCalls: [] }, tools, yes)
        .content,
    ).toBe("ab");
    expect(normalizeReply({ content: { type: "text", text: "hello" }, toolCalls: [] }, tools, yes).content).toBe(
      "hello",
    );
    expect(normalizeReply({ content: { weird: true }, toolCalls: [] }, tools, yes).content).toBe("");
    expect(textOf(undefined)).toBe("");
  });

  it("never keeps thinking, and promotes a text call found after it", () => {
    n = 0;
    const reply = normalizeReply(
      {
        content:
          '<think>maybe <tool_call>{"name":"exec","arguments":{"command":"rm -rf /"}}</tool_call></think>\n<tool_call>{"name":"read_file","arguments":{"path":"a"}}</tool_call>',
        toolCalls: [],
        finishReason: "stop",
      },
      tools,
      yes,
      seq,
    );
    expect(reply).toEqual({
      content: "",
      toolCalls: [{ id: "gen1", name: "read_file", arguments: '{"path":"a"}' }],
      finishReason: "stop",
      fromText: true,
    });
  });

  it("does not promote text calls next to real ones, but still removes their markup", () => {
    const reply = normalizeReply(
      {
        content: 'ok <tool_call>{"name":"exec","arguments":{}}</tool_call>',
        toolCalls: [{ id: "x", name: "exec", arguments: "{}" }],
      },
      tools,
      yes,
    );
    expect(reply.toolCalls).toHaveLength(1);
    expect(reply.content).toBe("ok");
  });

  it("names what it threw away: a text call to a tool not offered", () => {
    const reply = normalizeReply(
      { content: '<tool_call>{"name":"rm","arguments":{}}</tool_call>', toolCalls: [] },
      tools,
      yes,
    );
    expect(reply).toEqual({
      content: "",
      toolCalls: [],
      discarded: ['a tool call to "rm", which is not one of your tools'],
    });
  });

  it("leaves markup as text, unread, when the model client says its text calls may not run", () => {
    const content = 'Quoted: <tool_call>{"name":"exec","arguments":{"command":"id"}}</tool_call>';
    let asked = 0;
    const no = () => {
      asked++;
      return false;
    };
    expect(normalizeReply({ content, toolCalls: [] }, tools, no)).toEqual({ content, toolCalls: [] });
    expect(asked).toBe(1);
    const structured = normalizeReply({ content, toolCalls: [{ id: "a", name: "exec", arguments: "{}" }] }, tools, no);
    expect(structured.content).toBe("Quoted:");
    expect(structured.fromText).toBeUndefined();
    expect(asked).toBe(1);
    expect(normalizeReply({ content, toolCalls: [] }, tools, yes).fromText).toBe(true);
  });

  it("keeps the list of what it threw away short", () => {
    const flood = `${"[TOOL_CALLS]".repeat(1000)}<tool_call>{"name":"${"x".repeat(5000)}"}</tool_call>`;
    const reply = normalizeReply({ content: flood, toolCalls: [] }, tools, yes);
    expect(reply.discarded).toEqual([
      `a tool call to "${"x".repeat(64)}", which is not one of your tools`,
      "a tool call that could not be read",
    ]);
  });

  it("reads max_tokens as length", () => {
    expect(normalizeReply({ content: "x", toolCalls: [], finishReason: "max_tokens" }, tools, yes).finishReason).toBe(
      "length",
    );
    expect(normalizeReply({ content: "x", toolCalls: [], finishReason: 3 }, tools, yes).finishReason).toBeUndefined();
  });
});

describe("withoutReasoning", () => {
  it("removes closed blocks anywhere, an unclosed leading one, and what precedes a lone closing tag", () => {
    expect(withoutReasoning("<think>a\nb</think>\n\nAnswer")).toBe("Answer");
    expect(withoutReasoning("One <think>x</think>two<think>y</think>")).toBe("One two");
    expect(withoutReasoning("  <think>still thinking when cut")).toBe("");
    expect(withoutReasoning("reasoning the template opened\n</think>\nAnswer")).toBe("Answer");
    expect(withoutReasoning("I like <b>bold</b> text")).toBe("I like <b>bold</b> text");
    expect(withoutReasoning("a<think>b</think>c<think>d")).toBe("ac<think>d");
  });

  it("stays linear on a flood of unclosed tags (a lazy regex took minutes)", () => {
    expect(withoutReasoning("<think>".repeat(40_000))).toBe("");
    expect(withoutReasoning(`x${"<think>".repeat(40_000)}`)).toHaveLength(1 + 7 * 40_000);
    expect(withoutReasoning("</think>".repeat(40_000))).toBe("");
  });
});

describe("storableArguments", () => {
  it("keeps JSON objects and replaces anything else by {}", () => {
    expect(storableArguments('{"path": "notes.txt"}')).toBe('{"path": "notes.txt"}');
    expect(storableArguments('{"path": "notes.txt",')).toBe("{}");
    expect(storableArguments("")).toBe("{}");
    expect(storableArguments("[1]")).toBe("{}");
    expect(storableArguments("null")).toBe("{}");
    expect(storableArguments({ path: "x" })).toBe('{"path":"x"}');
    expect(storableArguments(undefined)).toBe("{}");
  });
});

describe("callId", () => {
  it("is nine alphanumerics, unique", () => {
    const ids = new Set(Array.from({ length: 1000 }, callId));
    expect(ids.size).toBe(1000);
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9]{9}$/);
  });
});

describe("closesThinkingAlone", () => {
  it("is a </think> with no <think> before it: the template opened the block", () => {
    expect(closesThinkingAlone("pondering</think>answer")).toBe(true);
    expect(closesThinkingAlone("a</think>b<think>c</think>")).toBe(true);
    expect(closesThinkingAlone("<think>x</think>answer")).toBe(false);
    expect(closesThinkingAlone("just an answer")).toBe(false);
  });
});
