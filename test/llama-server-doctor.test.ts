import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { tempHome } from "./helpers/app.js";
import { pincerAsNewUser } from "./helpers/daemon.js";
import { findLlamaServer, type LlamaServer, startLlamaServer } from "./helpers/llama-server.js";

// `pincer doctor` sends the request a first turn sends and says what would stop one (issue 23),
// here against a real llama-server with the tiny scripted model, which calls list_dir when asked
// by the doctor and only when its server is set up to let it.
const build = findLlamaServer();

/** ChatML that knows nothing of tools: llama-server drops the tools of a request silently. */
const NO_TOOLS_TEMPLATE = `{%- for message in messages -%}
{{- "<|im_start|>" + message.role + "\\n" + (message.content or "") + "<|im_end|>\\n" -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- "<|im_start|>assistant\\n" -}}{%- endif -%}`;

describe.skipIf(!build)("pincer doctor against llama-server", () => {
  let server: LlamaServer | undefined;
  afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  /** doctor's "model turn" line against a llama-server started with `flags`. */
  async function modelTurnLine(flags: string[]): Promise<string> {
    if (!build) throw new Error("no build");
    server = await startLlamaServer(build, flags);
    const { stdout } = await pincerAsNewUser(["doctor"], {
      OPENAI_API_KEY: "test",
      OPENAI_BASE_URL: server.url,
      PINCER_SANDBOX: "none",
    });
    return stdout.split("\n").find((line) => line.includes("model turn")) ?? stdout;
  }

  it("a server set up right: the turn's request is answered with a tool call", async () => {
    expect(await modelTurnLine(["--jinja", "-c", "8192"])).toMatch(/^\[ok {2}\] model turn: .*tool call \(list_dir\)/);
  });

  it("--no-jinja: fails, and says to restart it with --jinja", async () => {
    expect(await modelTurnLine(["--no-jinja", "-c", "8192"])).toMatch(/^\[FAIL\] model turn: .*--jinja/);
  });

  it("-c 2048: fails, naming the context, the fixed prompt and the tools to turn off", async () => {
    const line = await modelTurnLine(["--jinja", "-c", "2048"]);
    expect(line).toMatch(/^\[FAIL\] model turn: .*2,048 tokens, smaller than pincer's fixed prompt/);
    expect(line).toContain("agent.disabledTools");
  });

  it("a template without tool support: the model's call written as text is one pincer runs, so a turn works", async () => {
    const template = join(tempHome("pincer-template-"), "no-tools.jinja");
    writeFileSync(template, NO_TOOLS_TEMPLATE);
    const line = await modelTurnLine(["--jinja", "-c", "8192", "--chat-template-file", template]);
    // The tiny model writes <tool_call> markup, as Qwen does when its template drops the tools;
    // pincer promotes a text call naming an offered tool (llama-server-replies.test.ts runs one).
    expect(line).toMatch(/^\[ok {2}\] model turn: .*tool call \(list_dir\)/);
  });
});
