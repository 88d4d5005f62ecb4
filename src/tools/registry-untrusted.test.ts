import { describe, expect, it } from "vitest";
import { toolContext } from "../../test/helpers/tools.js";
import { ToolRegistry } from "./registry.js";
import type { Tool } from "./tool.js";

const tool = (name: string, untrusted?: boolean): Tool => ({
  name,
  description: name,
  parameters: { type: "object", properties: {} },
  untrusted,
  execute: async () => `${name} ran`,
});

const ctx = toolContext("x", "/tmp");

describe("registry views for runs nobody watches", () => {
  it("withoutUntrusted hides untrusted tools and refuses calls to them; a view of a view keeps both reasons", async () => {
    const registry = new ToolRegistry().register(tool("exec")).register(tool("cron")).register(tool("mcp_x_y", true));
    const view = registry
      .restricted(
        (name) => name !== "cron",
        (name) => `${name} is withheld here`,
      )
      .withoutUntrusted();
    expect(view.toSchemas().map((s) => s.function.name)).toEqual(["exec"]);
    expect(await view.execute("exec", "{}", ctx)).toBe("exec ran");
    expect(await view.execute("cron", "{}", ctx)).toBe("Error: cron is withheld here");
    expect(await view.execute("mcp_x_y", "{}", ctx)).toMatch(
      /^Error: mcp_x_y belongs to an MCP server not marked "trusted"/,
    );
    // The registry itself still runs it for chats.
    expect(await registry.execute("mcp_x_y", "{}", ctx)).toBe("mcp_x_y ran");
  });
});
