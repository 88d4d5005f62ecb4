import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempHome } from "./helpers/app.js";
import { gatewayOnFakes, USER } from "./helpers/daemon.js";
import { HOSTILE } from "./helpers/mcp.js";

/**
 * An MCP server's argument schema is the server's to choose: a `pattern` that backtracks
 * exponentially (`^(a+)+$` against 34 a's and a `!`, hours in a backtracking engine) or a
 * `uniqueItems` checked pair by pair must not freeze the built daemon. Checked from outside:
 * another chat is answered while and after the model uses them.
 */

const OTHER = USER + 1;
const fakes = gatewayOnFakes({ TELEGRAM_ALLOW_FROM: `${USER},${OTHER}` });
const { model, gateway, say, until } = fakes;

describe("an MCP tool's argument schema", () => {
  it("costs bounded time whatever it declares (a catastrophic or huge pattern, uniqueItems, an allOf bomb): other chats stay answered", async () => {
    const home = tempHome("pincer-mcp-redos-");
    writeFileSync(
      join(home, "config.json"),
      JSON.stringify({
        // Room for the 40,000 items in the prompt of the turn's second model call.
        agent: { contextTokens: 1_000_000 },
        mcp: { servers: { h: { command: process.execPath, args: [HOSTILE, "redos"] } } },
      }),
    );
    model.respond((request) => {
      const last = request.messages.at(-1);
      if (last?.role === "tool") return { content: "checked" };
      if (String(last?.content).includes("ping")) return { content: "pong" };
      return {
        toolCalls: [
          { name: "mcp_h_match", arguments: { text: `${"a".repeat(34)}!` } },
          // Half a minute of RE2 for a pattern of 19,000 instructions against 200 KB: over its budget.
          { name: "mcp_h_heavy", arguments: { text: "ab".repeat(100_000) } },
          // 40,000 distinct objects: ajv's own uniqueItems compares every pair (minutes).
          { name: "mcp_h_unique", arguments: { items: Array.from({ length: 40_000 }, (_, i) => ({ n: i })) } },
          // Offered, its check would walk 2^32 schemas: refused when the server's tools are listed.
          { name: "mcp_h_bomb", arguments: { x: "boom" } },
        ],
      };
    });
    gateway(home);
    say("check my text");
    await until(() => model.requests.length > 0, "the first chat's turn to start", 30_000);
    say("ping", OTHER);
    await until(
      () => fakes.telegram.sent.find((m) => m.chatId === String(OTHER) && m.text === "pong"),
      "the other chat's answer",
    );
    await until(
      () => fakes.telegram.sent.find((m) => m.chatId === String(USER) && m.text === "checked"),
      "the first chat's answer",
      // Four bounded checks one after another (RE2's budget, 40,000 items): slow on a busy machine.
      60_000,
    );
    const results = model.requests
      .flatMap((r) => r.messages)
      .filter((m) => m.role === "tool")
      .map((m) => String(m.content));
    expect(results.slice(0, 3)).toEqual([
      'Error: invalid arguments for mcp_h_match: text must match pattern "^(a+)+$".',
      expect.stringMatching(/^Error: invalid arguments for mcp_h_heavy: text must match pattern/),
      "unique ran",
    ]);
    // A pattern RE2 cannot compile (lookahead) leaves that tool out instead of matching it some other way.
    const offered = (model.requests[0].tools ?? []).map((t) => t.function.name);
    expect(offered).toContain("mcp_h_match");
    expect(offered).not.toContain("mcp_h_lookahead");
    expect(offered).not.toContain("mcp_h_bomb");
  }, 90_000);
});
