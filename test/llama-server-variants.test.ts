import { describe, expect, it } from "vitest";
import { exchangesAbout, llamaPerTest, NOTES, onlyTools } from "./helpers/llama-chat.js";
import { findLlamaServer } from "./helpers/llama-server.js";

// The ways people start llama-server that broke pincer (issue 23), each against the real server
// and the tiny scripted model of .ci/write-tiny-model.py.
const build = findLlamaServer();

describe.skipIf(!build)("pincer against llama-server started other ways", () => {
  const start = llamaPerTest(build);

  it("-c 2048: a sentence that names agent.contextTokens and what to turn off, and the chat goes on", async () => {
    const { chat } = await start(["--jinja", "-c", "2048"]);
    const answer = await chat.say("small", "hello");
    expect(answer).toContain("agent.contextTokens");
    expect(answer).toMatch(/agent\.disabledTools.*exec/);
    expect(answer).not.toMatch(/something went wrong|try again in a moment/i);
    // Not stuck behind the first message: the next one is answered as well.
    expect(await chat.say("small", "hello again")).toContain("agent.contextTokens");
  });

  it("-c 2048 with the tools it needs only: the conversation works", async () => {
    const { server, chat } = await start(["--jinja", "-c", "2048"], onlyTools("read_file"));
    expect(await chat.say("fits", "hello")).toBe("Hello from this tiny model!");
    expect(await chat.say("fits", "What do my pineapple notes say?")).toBe("I read the file for you.");
    const result = exchangesAbout(server, "pineapple")
      .flatMap((e) => e.body.messages)
      .find((m) => m.role === "tool");
    expect(String(result?.content)).toContain(NOTES);
  });

  it("--no-jinja (jinja is on by default now): one clear sentence, and the chat is not stuck", async () => {
    const { chat } = await start(["--no-jinja", "-c", "8192"]);
    const answer = await chat.say("nojinja", "hello");
    expect(answer).toMatch(/--jinja/);
    expect(answer).not.toMatch(/try again in a moment|something went wrong/i);
    expect(await chat.say("nojinja", "hello again")).toMatch(/--jinja/);
  });
});
