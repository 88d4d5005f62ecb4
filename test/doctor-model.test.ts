/**
 * `pincer doctor` sends one real tool-offering request, the one a first turn sends, and says
 * what would stop a turn. Run as a user runs it: the built CLI against the scripted server, which
 * answers in the words of llama-server started without --jinja, with -c 2048, or with a template
 * that has no tools.
 */
import { describe, expect, it } from "vitest";
import { tempHome } from "./helpers/app.js";
import { pincerAsNewUser } from "./helpers/daemon.js";
import { fakeModelForFile } from "./helpers/model.js";

const fake = fakeModelForFile();

function doctor() {
  return pincerAsNewUser(["doctor"], {
    OPENAI_API_KEY: "test",
    OPENAI_BASE_URL: fake.url,
    PINCER_HOME: tempHome(),
    PINCER_SANDBOX: "none",
  });
}

/** The doctor's line about the turn's request. */
const turnLine = (stdout: string) => stdout.split("\n").find((line) => line.includes("] model turn: ")) ?? stdout;

describe("pincer doctor runs a turn's request", () => {
  it("says ok when the model calls the offered tool, with the context the server told", async () => {
    fake.serveProps({ default_generation_settings: { n_ctx: 8192 } });
    fake.respond(() => ({ toolCalls: [{ name: "list_dir", arguments: {} }] }));
    try {
      const result = await doctor();
      expect(turnLine(result.stdout)).toMatch(
        /^\[ok {2}\] model turn: a request with \d+ tools was answered with a tool call \(list_dir\); context 8,192 tokens \(from the server's \/props\); the fixed prompt takes about [\d,]+$/,
      );
      expect(result.code).toBe(0);
      const sent = fake.requests.at(-1);
      expect(sent?.tools?.map((t) => t.function.name)).toEqual(expect.arrayContaining(["list_dir", "exec", "cron"]));
      expect(String(sent?.messages[0].content)).toContain("## SOUL.md");
    } finally {
      fake.serveProps(undefined);
      fake.respond(() => ({ content: "ok" }));
    }
  });

  it("fails on llama-server without --jinja, naming the flag", async () => {
    const jinja = { error: { code: 500, message: "tools param requires --jinja flag", type: "server_error" } };
    fake.respond(() => ({ status: 500, body: jinja }));
    try {
      const result = await doctor();
      expect(turnLine(result.stdout)).toBe(
        "[FAIL] model turn: llama-server refuses every request that offers tools: restart it with --jinja (and without --no-jinja)",
      );
      expect(result.code).toBe(1);
      // One request: the doctor does not retry what cannot heal.
      expect(fake.requests.filter((r) => r.tools)).toHaveLength(1);
    } finally {
      fake.respond(() => ({ content: "ok" }));
    }
  });

  it("fails when the server's context is smaller than the fixed prompt (-c 2048), naming the biggest tools", async () => {
    fake.limitContext(2048);
    try {
      const result = await doctor();
      expect(turnLine(result.stdout)).toMatch(
        /^\[FAIL\] model turn: the server's context is 2,048 tokens, smaller than pincer's fixed prompt \(about [\d,]+ tokens: instructions and \d+ tool schemas\), so no turn can succeed: start the server with a larger context \(llama\.cpp -c 8192.*agent\.disabledTools \(the biggest: \w+ \(\d+\), .*\); the server counted the request as [\d,]+ tokens$/,
      );
      expect(result.code).toBe(1);
    } finally {
      fake.limitContext(undefined);
    }
  });

  it("fails when /props tells a context too small, even if the server would take this one request", async () => {
    fake.serveProps({ n_ctx: 2048 });
    try {
      const result = await doctor();
      expect(turnLine(result.stdout)).toMatch(
        /^\[FAIL\] model turn: the model's context is 2,048 tokens \(from the server's \/props\), smaller than pincer's fixed prompt/,
      );
    } finally {
      fake.serveProps(undefined);
    }
  });

  it("a tool call written as text naming the offered tool is one pincer runs: ok; naming another tool, a warning", async () => {
    fake.respond(() => ({ content: '<tool_call>\n{"name": "list_dir", "arguments": {}}\n</tool_call>' }));
    try {
      expect(turnLine((await doctor()).stdout)).toMatch(
        /^\[ok {2}\] model turn: .*answered with a tool call \(list_dir\)/,
      );
      fake.respond(() => ({ content: '<tool_call>{"name": "ls", "arguments": {}}</tool_call>' }));
      expect(turnLine((await doctor()).stdout)).toMatch(
        /^\[warn\] model turn: the model writes its tool calls as text/,
      );
    } finally {
      fake.respond(() => ({ content: "ok" }));
    }
  });

  it("warns when the reply ignores the tools (a template without tool support)", async () => {
    const result = await doctor();
    expect(turnLine(result.stdout)).toMatch(
      /^\[warn\] model turn: the model answered without calling the offered tool: its chat template may not support tools .*; context not told by the server, agent\.contextTokens 32,000 assumed$/,
    );
    expect(result.code).toBe(0);
  });

  it("a model name the server does not serve is named as such, not blamed on the template", async () => {
    fake.respond(() => ({ status: 404, body: { error: { message: "model 'absent' not found", type: "not_found" } } }));
    try {
      const result = await doctor();
      expect(turnLine(result.stdout)).toMatch(
        /^\[FAIL\] model turn: the model endpoint answered 404 \(not found\): check OPENAI_BASE_URL .*PINCER_MODEL "gpt-4\.1-mini" is a model it serves$/,
      );
      expect(turnLine(result.stdout)).not.toContain("template");
    } finally {
      fake.respond(() => ({ content: "ok" }));
    }
  });

  it("fails when the template refuses the request, with what to check", async () => {
    const refused = {
      error: {
        code: 500,
        message: "Conversation roles must alternate user/assistant/user/assistant/...",
        type: "server_error",
      },
    };
    fake.respond(() => ({ status: 500, body: refused }));
    try {
      const result = await doctor();
      expect(turnLine(result.stdout)).toMatch(
        /^\[FAIL\] model turn: the model endpoint answered 500: .*Conversation roles must alternate.*, to a request like a turn's .*: the server's chat template may not take tools or a system message/,
      );
    } finally {
      fake.respond(() => ({ content: "ok" }));
    }
  });
});
