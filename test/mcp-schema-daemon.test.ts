import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempHome } from "./helpers/app.js";
import { gatewayOnFakes, USER } from "./helpers/daemon.js";
import { HOSTILE } from "./helpers/mcp.js";

/**
 * An MCP server's argument schema is the server's to choose: a `pattern` that backtracks
 * exponentially (`^(a+)+$` against 34 a's and a `!`, hours in a backtracking engine) must not freeze
 * the built daemon. Checked from outside: another chat is answered while and after the model uses it.
 */

const OTHER = USER + 1;
const fakes = gatewayOnFakes({ TELEGRAM_ALLOW_FROM: `${USER},${OTHER}` });
const { model, gateway, say, until } = fakes;

describe("an MCP tool's argument schema", () => {
  it("a catastrophic pattern is matched by RE2: the call gets an Error, other chats stay answered", async () => {
    const home = tempHome("pincer-mcp-redos-");
    writeFileSync(
      join(home, "config.json"),
      JSON.stringify({ mcp: { servers: { h: { command: process.execPath, args: [HOSTILE, "redos"] } } } }),
    );
    model.respond((request) => {
      const last = request.messages.at(-1);
      if (last?.role === "tool") return { content: `tool said: ${String(last.content)}` };
      if (String(last?.content).includes("ping")) return { content: "pong" };
      return { toolCalls: [{ name: "mcp_h_match", arguments: { text: `${"a".repeat(34)}!` } }] };
    });
    gateway(home);
    say("check my text");
    await until(() => model.requests.length > 0, "the first chat's turn to start", 30_000);
    say("ping", OTHER);
    await until(
      () => fakes.telegram.sent.find((m) => m.chatId === String(OTHER) && m.text === "pong"),
      "the other chat's answer",
    );
    const answer = await until(
      () => fakes.telegram.sent.find((m) => m.chatId === String(USER) && m.text.startsWith("tool said")),
      "the first chat's answer",
    );
    expect(answer.text).toBe('tool said: Error: invalid arguments for mcp_h_match: text must match pattern "^(a+)+$".');
    // A pattern RE2 cannot compile (lookahead) leaves that tool out instead of matching it some other way.
    const offered = (model.requests[0].tools ?? []).map((t) => t.function.name);
    expect(offered).toContain("mcp_h_match");
    expect(offered).not.toContain("mcp_h_lookahead");
  }, 90_000);
});
