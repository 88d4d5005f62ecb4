import { describe, expect, it } from "vitest";
import type { ModelReply } from "../llm/model.js";
import { askAgainNote, finalText, isFinal, textCallsNotice } from "./reply-policy.js";

const call = { id: "a", name: "write_file", arguments: '{"path": "notes.txt",' };
const reply = (r: Partial<ModelReply>): ModelReply => ({ content: "", toolCalls: [], ...r });

describe("reply policy", () => {
  it("asks again, without running anything, when a cut reply holds tool calls", () => {
    const cut = reply({ toolCalls: [call], finishReason: "length" });
    expect(askAgainNote(cut)).toMatch(/cut off at the length limit.*nothing was run/);
    expect(isFinal(cut)).toBe(true);
    expect(finalText(cut)).toBe("[cut off at the length limit while writing a tool call; nothing was run]");
  });

  it("treats a cut reply whose text call could not be read like a cut call", () => {
    const cut = reply({ content: "Saving", discarded: ["a tool call that could not be read"], finishReason: "length" });
    expect(askAgainNote(cut)).toMatch(/cut off/);
    expect(finalText(cut)).toBe("Saving\n\n[cut off at the length limit while writing a tool call; nothing was run]");
  });

  it("shows a cut text answer with a visible note", () => {
    expect(finalText(reply({ content: "Part one", finishReason: "length" }))).toBe(
      "Part one\n\n[cut off at the length limit]",
    );
    expect(finalText(reply({ finishReason: "length" }))).toBe("[cut off at the length limit before anything was said]");
    expect(askAgainNote(reply({ content: "Part one", finishReason: "length" }))).toBeUndefined();
  });

  it("asks again when all the reply had were calls that were thrown away", () => {
    expect(askAgainNote(reply({ discarded: ['a tool call to "rm", which is not one of your tools'] }))).toContain(
      '"rm"',
    );
    expect(
      askAgainNote(reply({ content: "Here you go", discarded: ["a tool call without a tool name"] })),
    ).toBeUndefined();
  });

  it("leaves ordinary replies alone", () => {
    const calls = reply({ toolCalls: [call], finishReason: "tool_calls" });
    expect(askAgainNote(calls)).toBeUndefined();
    expect(isFinal(calls)).toBe(false);
    expect(isFinal(reply({ content: "hi", finishReason: "stop" }))).toBe(true);
    expect(finalText(reply({ content: "hi" }))).toBe("hi");
  });

  it("says so when the endpoint withheld the answer (content_filter), empty or cut", () => {
    const note = "[the model's endpoint withheld the rest of this answer (content filter)]";
    expect(finalText(reply({ finishReason: "content_filter" }))).toBe(note);
    expect(finalText(reply({ content: "Half", finishReason: "content_filter" }))).toBe(`Half\n\n${note}`);
  });
});

describe("textCallsNotice", () => {
  it("shows each call read from text, exec as its command, in a fence no backtick in it can close, long ones cut", () => {
    const notice = textCallsNotice([
      { name: "exec", arguments: '{"command": "echo ```; touch x"}' },
      { name: "write_file", arguments: `{"path": "a", "content": "${"y".repeat(400)}"}` },
    ]);
    expect(notice).toMatch(
      /^The model wrote 2 tool calls as text; running them as written:\n````\nexec: echo ```; touch x\n/,
    );
    expect(notice).toContain('write_file {"path": "a"');
    expect(notice).toMatch(/… \(\d+ characters\)\n````$/);
    expect(textCallsNotice([{ name: "exec", arguments: "not json" }])).toContain("exec not json");
  });
});
