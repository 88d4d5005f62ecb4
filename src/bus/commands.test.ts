import { describe, expect, it } from "vitest";
import { helpText, parseCommand } from "./commands.js";

describe("parseCommand", () => {
  it.each([
    ["/new", "new"],
    [" /STOP ", "stop"],
    ["/status@pincer_bot", "status"],
    ["/help", "help"],
    ["/stop now", undefined],
    ["/stopwatch", undefined],
    ["hello /new", undefined],
    ["/unknown", undefined],
    ["", undefined],
  ])("%j -> %s", (text, expected) => {
    expect(parseCommand(text)).toBe(expected);
  });

  it("lists every command in the help", () => {
    expect(helpText()).toMatch(/\/new[\s\S]*\/stop[\s\S]*\/status[\s\S]*\/help/);
  });
});
