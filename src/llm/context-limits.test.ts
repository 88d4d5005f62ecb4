import { once } from "node:events";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  ContextLimits,
  contextFromModels,
  contextFromProps,
  discoverContext,
  readContextRefusal,
} from "./context-limits.js";

const quiet = { info() {}, warn() {} };
const file = () => join(mkdtempSync(join(tmpdir(), "pincer-limits-")), "context-windows.json");

describe("ContextLimits", () => {
  it("remembers per endpoint across instances; a refusal only lowers, the server's own word replaces", () => {
    const path = file();
    const first = new ContextLimits(path, quiet);
    first.learn("m at a", 8192, "props");
    first.learn("m at a", 16384, "refusal");
    expect(first.get("m at a")).toBe(8192);
    first.learn("m at a", 4096, "refusal");
    first.learn("n at b", 2048, "models");
    const second = new ContextLimits(path, quiet);
    expect(second.get("m at a")).toBe(4096);
    expect(second.get("n at b")).toBe(2048);
    second.learn("m at a", 32768, "props");
    expect(new ContextLimits(path, quiet).get("m at a")).toBe(32768);
    expect(new ContextLimits(path, quiet).get("unknown")).toBeUndefined();
  });

  it("keeps the file small and survives a broken one", () => {
    const path = file();
    const limits = new ContextLimits(path, quiet);
    for (let i = 0; i < 50; i++) limits.learn(`m${i}`, 1000 + i, "props");
    const saved = JSON.parse(readFileSync(path, "utf8"));
    expect(Object.keys(saved)).toHaveLength(32);
    expect(saved.m49.tokens).toBe(1049);
    expect(saved.m0).toBeUndefined();

    writeFileSync(path, '{"m at a": {"tokens": "lots"}, "n": {"tokens": 4096, "source": "props"}, "x": null}');
    const odd = new ContextLimits(path, quiet);
    expect(odd.get("m at a")).toBeUndefined();
    expect(odd.get("n")).toBe(4096);
    writeFileSync(path, "{not json");
    const warned: string[] = [];
    const broken = new ContextLimits(path, { info() {}, warn: (_o: object, m: string) => warned.push(m) } as never);
    expect(broken.get("n")).toBeUndefined();
    expect(warned).toHaveLength(1);
    broken.learn("n", 2048, "refusal");
    expect(new ContextLimits(path, quiet).get("n")).toBe(2048);
  });
});

describe("discoverContext", () => {
  it("gives up on a server that never answers /props, and ignores what is not JSON", async () => {
    const server = createServer((req, res) => {
      if (req.url === "/props") return; // never answered
      res.writeHead(200, { "content-type": "application/json" });
      res.end("<html>not json</html>");
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const { port } = server.address() as AddressInfo;
    try {
      const found = await discoverContext({
        baseUrl: `http://127.0.0.1:${port}/v1/`,
        apiKey: "k",
        model: "m",
        timeoutMs: 300,
      });
      expect(found).toBeUndefined();
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});

describe("readContextRefusal", () => {
  it("reads llama.cpp's exceed_context_size_error, fields first", () => {
    const body = {
      code: 400,
      message: "request (3329 tokens) exceeds the available context size (2048 tokens), try increasing it",
      type: "exceed_context_size_error",
      n_prompt_tokens: 3329,
      n_ctx: 2048,
    };
    expect(readContextRefusal(`400 ${body.message}`, body)).toEqual({ contextTokens: 2048, promptTokens: 3329 });
    // The same from the words alone (a proxy that keeps only the message).
    expect(readContextRefusal(`400 ${body.message}`)).toEqual({ contextTokens: 2048, promptTokens: 3329 });
  });

  it("reads vLLM's, OpenAI's and LM Studio's words", () => {
    expect(
      readContextRefusal(
        "400 This model's maximum context length is 8192 tokens. However, you requested 9000 tokens (8000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.",
      ),
    ).toEqual({ contextTokens: 8192, promptTokens: 8000 });
    expect(
      readContextRefusal(
        "This model's maximum context length is 8192 tokens. However, your request has 9001 input tokens. Please reduce the length of the input messages.",
      ),
    ).toEqual({ contextTokens: 8192, promptTokens: 9001 });
    expect(
      readContextRefusal(
        "400 This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages.",
        { code: "context_length_exceeded", type: "invalid_request_error" },
      ),
    ).toEqual({ contextTokens: 128000, promptTokens: 130512 });
    expect(
      readContextRefusal(
        "Trying to keep the first 5000 tokens when context the overflows. However, the model is loaded with context length of only 4096 tokens, which is not enough.",
      ),
    ).toEqual({ contextTokens: 4096, promptTokens: undefined });
  });

  it("knows a refusal without numbers, and leaves other errors alone", () => {
    expect(readContextRefusal("500 the request exceeds the available context size, try increasing it")).toEqual({
      contextTokens: undefined,
      promptTokens: undefined,
    });
    expect(readContextRefusal("400 bad", { code: "context_length_exceeded" })).toEqual({});
    expect(readContextRefusal("500 tools param requires --jinja flag")).toBeUndefined();
    expect(readContextRefusal("400 Unexpected empty grammar stack after accepting piece: {")).toBeUndefined();
    // Hostile or odd fields are not numbers.
    expect(readContextRefusal("400 nope", { n_ctx: "lots", n_prompt_tokens: -3 })).toBeUndefined();
    expect(readContextRefusal("400 exceeds the available context", { n_ctx: 1e300 })).toEqual({});
  });
});

describe("contextFromProps", () => {
  it("prefers the slot's n_ctx (llama-server with --parallel splits the context)", () => {
    expect(contextFromProps({ default_generation_settings: { n_ctx: 2048 }, n_ctx: 8192 })).toBe(2048);
    expect(contextFromProps({ n_ctx: 8192 })).toBe(8192);
    expect(contextFromProps({ default_generation_settings: { n_ctx: 0 } })).toBeUndefined();
    expect(contextFromProps("<html>")).toBeUndefined();
    expect(contextFromProps(null)).toBeUndefined();
  });
});

describe("contextFromModels", () => {
  it("reads the model's entry in each server's style", () => {
    const list = (entry: object) => ({ object: "list", data: [{ id: "other", max_model_len: 1 }, entry] });
    expect(contextFromModels(list({ id: "m", max_model_len: 8192 }), "m")).toBe(8192);
    expect(contextFromModels(list({ id: "m", context_length: 131072 }), "m")).toBe(131072);
    expect(contextFromModels(list({ id: "m", max_context_length: 32768, loaded_context_length: 4096 }), "m")).toBe(
      4096,
    );
    expect(contextFromModels(list({ id: "m", top_provider: { context_length: 65536 } }), "m")).toBe(65536);
    expect(contextFromModels(list({ id: "m" }), "m")).toBeUndefined();
    expect(contextFromModels(list({ id: "m", max_model_len: 8192 }), "absent")).toBeUndefined();
  });

  it("takes the only entry when the server names its model differently (llama-server's file name)", () => {
    expect(contextFromModels({ data: [{ id: "model.gguf", max_model_len: 4096 }] }, "local")).toBe(4096);
    expect(contextFromModels({ data: "x" }, "m")).toBeUndefined();
    expect(contextFromModels([], "m")).toBeUndefined();
  });
});
