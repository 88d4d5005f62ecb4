import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempHome } from "./helpers/app.js";
import { assistantHistory, exchangesAbout, llamaPerTest, NOTES, onlyTools } from "./helpers/llama-chat.js";
import { findLlamaServer } from "./helpers/llama-server.js";
import { until } from "./helpers/until.js";

// Replies the way a real llama-server sends them (issue 23): thinking in the content, tool calls
// written as text, answers cut at max_tokens. The tiny scripted model is .ci/write-tiny-model.py's.
const build = findLlamaServer();

/** ChatML that renders tool results but knows nothing of tools: llama-server drops them silently. */
const NO_TOOLS_TEMPLATE = `{%- for message in messages -%}
{%- if message.role == "tool" -%}
{{- "<|im_start|>user\\n<tool_response>\\n" + message.content + "\\n</tool_response><|im_end|>\\n" -}}
{%- else -%}
{{- "<|im_start|>" + message.role + "\\n" + (message.content or "") + "<|im_end|>\\n" -}}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- "<|im_start|>assistant\\n" -}}{%- endif -%}`;

/** A babbling model makes 10-40 tokens a second on a busy machine; -c 2048 keeps max_tokens at 512. */
const SLOW = 180_000;

describe.skipIf(!build)("pincer against llama-server's replies", () => {
  const start = llamaPerTest(build);

  it("--reasoning-format none: the <think> block is neither shown nor stored", async () => {
    const { server, chat } = await start(["--jinja", "-c", "8192", "--reasoning-format", "none"]);
    expect(await chat.say("think", "Please ponder this.")).toBe("Done thinking, here it is");
    await chat.say("think", "And once more?");
    const history = JSON.stringify(exchangesAbout(server, "once more").at(-1)?.body.messages);
    expect(history).toContain("Done thinking, here it is");
    expect(history).not.toMatch(/careful answer|<think>/);
    expect(chat.sent("think").join("\n")).not.toMatch(/careful answer|think>/);
  });

  it("a template without tool support: the call written as text runs, its markup is never shown", async () => {
    const template = join(tempHome("pincer-template-"), "no-tools.jinja");
    writeFileSync(template, NO_TOOLS_TEMPLATE);
    const { server, chat } = await start(["--jinja", "-c", "8192", "--chat-template-file", template]);
    // The chat is shown what runs (never the markup), then the answer.
    const shown = await chat.say("text-call", "What do my pineapple notes say?");
    expect(shown).toMatch(/^The model wrote a tool call as text; running it as written:\n```\nread_file \{/);
    await until(() => chat.sent("text-call").includes("I read the file for you."), "the answer");
    const result = exchangesAbout(server, "pineapple")
      .flatMap((e) => e.body.messages)
      .find((m) => m.role === "tool");
    expect(String(result?.content)).toContain(NOTES);
    expect(chat.sent("text-call").join("\n")).not.toMatch(/tool_call/);
  });

  it(
    "a babbling reply is bounded by max_tokens and says it was cut",
    async () => {
      const { server, chat } = await start(["--jinja", "-c", "2048"], onlyTools("read_file"));
      const answer = await chat.say("babble", "Some chatter please.", SLOW);
      expect(answer).toMatch(/^Here goes: la di da la di da/);
      expect(answer).toMatch(/cut/i);
      const request = exchangesAbout(server, "chatter")[0]?.body;
      expect(request?.max_tokens ?? request?.max_completion_tokens).toBeGreaterThan(0);
      expect(answer.length).toBeLessThan(2048 * 10);
    },
    SLOW,
  );

  it(
    "a tool call cut off at max_tokens is never run or stored, and the chat goes on",
    async () => {
      const { server, chat } = await start(["--jinja", "-c", "2048"], onlyTools("read_file"));
      expect(await chat.say("cut", "Read the avalanche file.", SLOW)).toMatch(/cut/i);
      const messages = exchangesAbout(server, "avalanche").flatMap((e) => e.body.messages);
      expect(messages.some((m) => m.role === "tool")).toBe(false);
      // Stored half-written arguments would make the server refuse every later request.
      await chat.say("cut", "hello after that", SLOW);
      const later = exchangesAbout(server, "after that");
      expect(later.length).toBeGreaterThan(0);
      expect(later.every((e) => e.status === 200)).toBe(true);
      expect(assistantHistory(server)).not.toContain("lo mi fa");
    },
    SLOW,
  );
});
