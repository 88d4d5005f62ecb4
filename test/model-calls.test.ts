import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createOpenAIModel, ModelError, type ModelOptions } from "../src/llm/model.js";
import { createTranscriber } from "../src/llm/transcribe.js";
import { tempHome } from "./helpers/app.js";
import { fakeModelForFile } from "./helpers/model.js";

/**
 * One model call through the real openai client against the fake endpoint: what is asked again,
 * what is not, and that the whole call (body included) ends within modelTimeoutSeconds.
 */
const fake = fakeModelForFile();
const question = { messages: [{ role: "user" as const, content: "hi" }] };

function model(options: Partial<ModelOptions> = {}) {
  return createOpenAIModel({
    apiKey: "test",
    baseUrl: fake.url,
    model: "gpt-4.1-mini",
    timeoutSeconds: 1,
    retries: 2,
    stream: false,
    ...options,
  });
}

async function failure(promise: Promise<unknown>): Promise<ModelError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof ModelError)) throw new Error(`expected a ModelError, got ${String(err)}`);
  return err;
}

describe("a model call", () => {
  it("asks once when the endpoint blames the request (llama.cpp's grammar and --jinja 500s, a 400)", async () => {
    const refusals = [
      { status: 500, message: 'Unexpected empty grammar stack after accepting piece: {"path": "notes.txt",' },
      { status: 500, message: "tools param requires --jinja flag" },
      { status: 400, message: "Invalid value for 'tool_choice'" },
    ];
    for (const refusal of refusals) {
      fake.requests.length = 0;
      fake.respond(() => refusal);
      // The refusal comes at once; the long timeout only keeps a busy machine's cold start out of the claim.
      const err = await failure(model({ timeoutSeconds: 20 }).complete(question));
      expect(fake.requests).toHaveLength(1);
      expect(err.permanent).toBe(true);
      expect(err.message).not.toMatch(/grammar stack|500: 500|400: 400/);
    }
  });

  it("asks again, within the retries, when a failure may heal, and says the status once", async () => {
    fake.respond(() => ({ status: 503, message: "503 Service Unavailable" }));
    const err = await failure(model({ timeoutSeconds: 20 }).complete(question));
    expect(fake.requests).toHaveLength(3);
    expect(err).toMatchObject({
      permanent: false,
      away: true,
      message: "the model endpoint answered 503: Service Unavailable",
    });
  });

  it("ends a plain call that never answers at the deadline, retries and all, not three times it", async () => {
    fake.respond(() => ({ content: "late", delayMs: 10_000 }));
    const started = Date.now();
    const err = await failure(model().complete(question));
    expect(Date.now() - started).toBeLessThan(2500);
    // Not "away": a long answer on a slow machine looks the same, and is not waited on for hours.
    expect(err).toMatchObject({ message: "the model did not answer within 1 s", away: false, permanent: false });
    expect(fake.requests).toHaveLength(1);
  });

  for (const stream of [false, true]) {
    it(`cuts off ${stream ? "a stream" : "a plain answer"} that sends its headers and then one byte at a time`, async () => {
      // About 300 bytes at 20 ms each: six seconds to finish; the call may take one.
      fake.respond(() => ({ content: "x".repeat(100), trickleMs: 20 }));
      const started = Date.now();
      const err = await failure(model({ stream }).complete(question));
      expect(Date.now() - started).toBeLessThan(3000);
      expect(err.message).toBe("the model did not answer within 1 s");
    });
  }

  it("gives a trickling stream stopped by the caller no reply: the caller's reason comes back", async () => {
    fake.respond(() => ({ content: "x".repeat(100), trickleMs: 20 }));
    const stop = new AbortController();
    setTimeout(() => stop.abort(new Error("stopped by /stop")), 300);
    const result = model({ stream: true, timeoutSeconds: 30 }).complete({ ...question, signal: stop.signal });
    await expect(result).rejects.toThrow("stopped by /stop");
  });

  it("sends the request as UTF-8 JSON bytes: text beyond Latin-1 and a lone surrogate arrive as written", async () => {
    fake.respond(() => ({ content: "ok" }));
    const text = "café — 日本語 🦀 \ud800 end";
    await model().complete({ messages: [{ role: "user", content: text }] });
    const request = fake.requests.at(-1);
    expect(request?.messages).toEqual([{ role: "user", content: text }]);
    expect(request?.headers["content-type"]).toBe("application/json");
  });

  it("bounds a transcription the same way", async () => {
    const audio = join(tempHome(), "note.ogg");
    writeFileSync(audio, Buffer.alloc(1000, 1));
    const transcribe = createTranscriber({ apiKey: "test", baseUrl: fake.url, model: "whisper-1", timeoutSeconds: 1 });
    fake.transcribeWith({ text: "late", delayMs: 10_000 });
    const started = Date.now();
    await expect(transcribe(audio)).rejects.toThrow("the transcription endpoint did not answer within 1 s");
    expect(Date.now() - started).toBeLessThan(2500);
    fake.transcribeWith({ status: 400 });
    const before = fake.transcriptions.length;
    await expect(transcribe(audio)).rejects.toMatchObject({
      permanent: true,
      message: "the transcription endpoint answered 400",
    });
    expect(fake.transcriptions.length - before).toBe(1);
    fake.transcribeWith({ text: "hello" });
    await expect(transcribe(audio)).resolves.toBe("hello");
  });
});
