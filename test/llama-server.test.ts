import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { chatWithLlama, exchangesAbout, type LlamaChat, NOTES } from "./helpers/llama-chat.js";
import { findLlamaServer, llamaServerForFile } from "./helpers/llama-server.js";

// A real llama-server (built from node-llama-cpp's bundled llama.cpp by .ci/build-llama-server)
// running the tiny scripted model of .ci/write-tiny-model.py with Qwen3's template and --jinja:
// its own template rendering, tool-call parsing and grammar, reasoning extraction and SSE.
const build = findLlamaServer();
const llama = llamaServerForFile(build, ["--jinja", "-c", "8192"]);

describe.skipIf(!build).each([
  { how: "plain requests", stream: false },
  { how: "streamed (SSE)", stream: true },
])("pincer against llama-server --jinja -c 8192, $how", ({ stream }) => {
  let chat: LlamaChat;
  beforeAll(async () => {
    chat = await chatWithLlama(llama.server, (config) => {
      config.agent.stream = stream;
    });
  });
  afterAll(async () => {
    await chat?.stop();
  });
  beforeEach(() => {
    llama.server.exchanges.length = 0;
  });

  it("answers a plain message with the model's text", async () => {
    expect(await chat.say("plain", "hello")).toBe("Hello from this tiny model!");
    expect(await chat.say("plain", "hello again")).toBe("Hello from this tiny model!");
    expect(llama.server.exchanges.every((e) => Boolean(e.body.stream) === stream)).toBe(true);
  });

  it("runs the model's tool call and answers with what came back", async () => {
    expect(await chat.say("tool", "What do my pineapple notes say?")).toBe("I read the file for you.");
    const rounds = exchangesAbout(llama.server, "pineapple");
    // The server parsed the call itself; pincer ran it and sent the file back as the tool result.
    const call = rounds.flatMap((e) => e.body.messages).find((m) => m.role === "assistant" && m.tool_calls);
    expect(JSON.stringify(call?.tool_calls)).toContain("read_file");
    const result = rounds.flatMap((e) => e.body.messages).find((m) => m.role === "tool");
    expect(String(result?.content)).toContain(NOTES);
    expect(chat.sent("tool").join("\n")).not.toContain("tool_call");
  });

  it("never shows or stores the model's reasoning", async () => {
    expect(await chat.say("think", "Please ponder this.")).toBe("Done thinking, here it is");
    // The next turn's history carries the answer, not the thinking.
    await chat.say("think", "And once more?");
    const history = JSON.stringify(exchangesAbout(llama.server, "once more").at(-1)?.body.messages);
    expect(history).toContain("Done thinking, here it is");
    expect(history).not.toMatch(/careful answer|<think>/);
    expect(chat.sent("think").join("\n")).not.toMatch(/careful answer|<think>/);
  });
});

describe.skipIf(!build)("a conversation longer than llama-server's -c 8192", () => {
  let chat: LlamaChat;
  beforeAll(async () => {
    chat = await chatWithLlama(llama.server);
  });
  afterAll(async () => {
    await chat?.stop();
  });

  it("keeps being answered: every request is fitted to the server's window", async () => {
    // Each message is about 2,000 of the server's tokens; five of them are more than the window.
    const long = (n: number) => `Message ${n}: ${"hello world ".repeat(1000)}`;
    for (let n = 1; n <= 5; n++) expect(await chat.say("long", long(n))).toBe("Hello from this tiny model!");
    const last = llama.server.exchanges.at(-1);
    expect(last?.status).toBe(200);
    expect(JSON.stringify(last?.body.messages)).not.toContain("Message 1:");
  });
});
