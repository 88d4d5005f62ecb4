import { describe, expect, it } from "vitest";
import { contextFromModels, contextFromProps, readContextRefusal } from "./context-window.js";

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
