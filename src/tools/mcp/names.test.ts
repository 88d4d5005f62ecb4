import { describe, expect, it } from "vitest";
import { mcpToolName, pickTools } from "./names.js";

const tools = (...names: string[]) => names.map((name) => ({ name }));

describe("MCP tool names", () => {
  it("replaces characters outside [A-Za-z0-9_-] and cuts to 64", () => {
    expect(mcpToolName("git hub", "list.issues")).toBe("mcp_git_hub_list_issues");
    expect(mcpToolName("ä", "weird tool/ä.x")).toBe("mcp___weird_tool___x");
    expect(mcpToolName("s", "x".repeat(100))).toHaveLength(64);
    expect(mcpToolName("s", "ok-name_1")).toBe("mcp_s_ok-name_1");
  });

  it("keeps the first of two tools whose names collide, and says so", () => {
    const { picked, warnings } = pickTools("s", tools("a.b", "a_b", "c"), {});
    expect(picked.map((p) => [p.name, p.tool.name])).toEqual([
      ["mcp_s_a_b", "a.b"],
      ["mcp_s_c", "c"],
    ]);
    expect(warnings).toEqual(['tools "a.b" and "a_b" both become mcp_s_a_b; only "a.b" is offered']);
  });

  it("offers only enabledTools, by the server's name or pincer's, and flags names it does not know", () => {
    const { picked, warnings } = pickTools("s", tools("a", "b", "c"), { enabledTools: ["c", "mcp_s_a", "zzz"] });
    expect(picked.map((p) => p.name)).toEqual(["mcp_s_a", "mcp_s_c"]);
    expect(warnings).toEqual(['enabledTools lists "zzz", which the server does not offer']);
  });

  it("caps the number of tools and points at enabledTools", () => {
    const many = tools(...Array.from({ length: 10 }, (_, i) => `t${i}`));
    const { picked, warnings } = pickTools("s", many, { max: 4 });
    expect(picked).toHaveLength(4);
    expect(warnings).toEqual([
      "it offers 10 tools; only the first 4 are offered (list the ones you want in enabledTools)",
    ]);
  });
});
