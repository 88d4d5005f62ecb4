import { describe, expect, it } from "vitest";
import { describeToolRound } from "./progress.js";

const call = (name: string, args: unknown = {}) => ({ id: "x", name, arguments: JSON.stringify(args) });

describe("describeToolRound", () => {
  it("names the command of a single exec, shortened to one line without backticks", () => {
    expect(describeToolRound([call("exec", { command: "npm test\nnpm run lint" })])).toBe(
      "⏳ Working: exec `npm test`",
    );
    expect(describeToolRound([call("exec", { command: `echo \`date\` ${"x".repeat(80)}` })])).toMatch(
      /^⏳ Working: exec `echo 'date' x+…`$/,
    );
  });

  it("counts repeated tools and survives garbage arguments", () => {
    expect(describeToolRound([call("read_file"), call("read_file"), call("grep")])).toBe(
      "⏳ Working: read_file ×2, grep",
    );
    expect(describeToolRound([{ id: "y", name: "exec", arguments: "{not json" }])).toBe("⏳ Working: exec");
  });
});
