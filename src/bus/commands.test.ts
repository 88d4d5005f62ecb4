import { describe, expect, it } from "vitest";
import { commandArgument, helpText, parseCommand } from "./commands.js";

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
    ["/model", "model"],
    ["/MODEL@pincer_bot  Fast Local ", "model"],
    ["/modelx gpt", undefined],
  ])("%j -> %s", (text, expected) => {
    expect(parseCommand(text)).toBe(expected);
  });

  it("gives the model command its argument, the rest of the line", () => {
    expect(commandArgument("/model@pincer_bot  Fast Local ")).toBe("Fast Local");
    expect(commandArgument("/model")).toBe("");
    expect(commandArgument("/model\ngpt-4o")).toBe("gpt-4o");
  });

  it("lists every command in the help", () => {
    expect(helpText()).toMatch(/\/new[\s\S]*\/stop[\s\S]*\/status[\s\S]*\/help/);
  });
});
