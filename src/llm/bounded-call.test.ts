import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { boundedCall } from "./bounded-call.js";
import { ModelError } from "./failure.js";

const bounds = { timeoutMs: 60_000, retries: 0, who: "the model" };

describe("boundedCall", () => {
  it("aborts the attempt when the caller's signal aborts, with the caller's reason", async () => {
    const turn = new AbortController();
    const pending = boundedCall(
      bounds,
      turn.signal,
      (signal) =>
        new Promise((_resolve, reject) => {
          signal.addEventListener("abort", () => reject(new Error("cut")), { once: true });
        }),
    );
    turn.abort(new Error("stopped by /stop"));
    await expect(pending).rejects.toThrow("stopped by /stop");
  });

  it("aborts the attempt at the deadline with a sentence naming who did not answer", async () => {
    const pending = boundedCall(
      { ...bounds, timeoutMs: 50 },
      undefined,
      (signal) =>
        new Promise((_resolve, reject) => {
          signal.addEventListener("abort", () => reject(new Error("cut")), { once: true });
        }),
    );
    await expect(pending).rejects.toThrow(ModelError);
    await expect(pending).rejects.toThrow("the model did not answer within 0.1 s");
  });

  it("leaves nothing on the caller's signal and keeps no call's signal alive once the call is over", () => {
    // In a child with --expose-gc. The attempt adds an abort listener it never removes, as the openai
    // client does; 200 calls on one long-lived signal (a turn's, the worker's) must not keep 200
    // signals, their listeners and what those hold (with AbortSignal.any, Node kept every one).
    const script = `
      const { getEventListeners } = await import("node:events");
      const { boundedCall } = await import(${JSON.stringify(new URL("../../dist/src/llm/bounded-call.js", import.meta.url).href)});
      const turn = new AbortController();
      const refs = [];
      for (let i = 0; i < 200; i++) {
        await boundedCall({ timeoutMs: 60000, retries: 0, who: "the model" }, turn.signal, async (signal) => {
          signal.addEventListener("abort", () => {}, { once: true });
          refs.push(new WeakRef(signal));
          return "ok";
        });
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
      globalThis.gc(); globalThis.gc();
      console.log(JSON.stringify({ alive: refs.filter((r) => r.deref()).length, listeners: getEventListeners(turn.signal, "abort").length }));
    `;
    const out = execFileSync(process.execPath, ["--expose-gc", "--input-type=module", "-e", script], {
      encoding: "utf8",
    });
    expect(JSON.parse(out)).toEqual({ alive: 0, listeners: 0 });
  });
});
