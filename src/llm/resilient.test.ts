import { describe, expect, it } from "vitest";
import { type Model, ModelError, type ModelReply } from "./model.js";
import { CircuitBreaker, createResilientModel, ModelUnavailableError } from "./resilient.js";

const ok: ModelReply = { content: "ok", toolCalls: [] };

/** A model whose answers are scripted: an error to throw or a reply, one per call. */
function scripted(...script: Array<ModelReply | ModelError>): Model & { calls: number } {
  const model = {
    calls: 0,
    async complete() {
      const next = script[Math.min(model.calls++, script.length - 1)];
      if (next instanceof ModelError) throw next;
      return next;
    },
  };
  return model;
}

const down = () => new ModelError("the model endpoint answered 503: down", false, 503);

describe("CircuitBreaker", () => {
  it("opens after the threshold, fails fast for the cool-down, then lets one trial through", () => {
    const b = new CircuitBreaker({ failureThreshold: 2, coolDownMs: 1000 });
    expect(b.tryAcquire(0)).toBe(true);
    expect(b.failure(0)).toBe(false);
    expect(b.failure(10)).toBe(true);
    expect(b.tryAcquire(500)).toBe(false);
    expect(b.retryAt(500)).toBe(1010);
    expect(b.tryAcquire(1010)).toBe(true);
    expect(b.tryAcquire(1011)).toBe(false);
    expect(b.failure(1020)).toBe(false);
    expect(b.tryAcquire(1500)).toBe(false);
    expect(b.tryAcquire(2020)).toBe(true);
    expect(b.success()).toBe(true);
    expect(b.tryAcquire(2021)).toBe(true);
  });
});

describe("CircuitBreaker per conversation", () => {
  it("counts one conversation's answered failures once, away failures always, and backs that conversation off", () => {
    const b = new CircuitBreaker({ failureThreshold: 3, coolDownMs: 30_000 });
    for (let i = 0; i < 10; i++) expect(b.failure(i, "telegram:42", false)).toBe(false);
    expect(b.isOpen).toBe(false);
    expect(b.retryAt(100, "telegram:42")).toBe(100 + 20_000);
    expect(b.retryAt(100, "telegram:43")).toBe(100 + 2000);
    expect(b.failure(200, "telegram:43", false)).toBe(false);
    expect(b.failure(300, "telegram:44", false)).toBe(true);
    b.success();
    expect(b.failure(400, "telegram:42", true)).toBe(false);
    expect(b.failure(500, "telegram:42", true)).toBe(false);
    expect(b.failure(600, "telegram:42", true)).toBe(true);
    b.success();
    for (let i = 0; i < 3; i++) b.failure(700 + i);
    expect(b.isOpen).toBe(true);
  });

  it("one conversation's request refused with a plain 500 again and again leaves the endpoint to the others", async () => {
    const refused = new ModelError("the model endpoint answered 500", false, 500);
    const endpoint = {
      name: "a",
      breaker: new CircuitBreaker({ failureThreshold: 3, coolDownMs: 30_000 }),
      model: {
        async complete(request: { conversation?: string }) {
          if (request.conversation === "telegram:42") throw refused;
          return ok;
        },
      },
    };
    const model = createResilientModel([endpoint]);
    for (let i = 0; i < 5; i++) {
      await expect(model.complete({ messages: [], conversation: "telegram:42" })).rejects.toThrow(
        ModelUnavailableError,
      );
    }
    await expect(model.complete({ messages: [], conversation: "telegram:43" })).resolves.toBe(ok);
  });
});

describe("createResilientModel", () => {
  it("falls back on 5xx, timeouts, rate limits and connection errors, never on a permanent failure", async () => {
    const breaker = () => new CircuitBreaker({ failureThreshold: 3, coolDownMs: 1000 });
    const failures: Array<[ModelError, boolean]> = [
      [down(), true],
      [new ModelError("the model endpoint could not be reached"), true],
      [new ModelError("rate-limited", false, 429), true],
      [new ModelError("bad key", true, 401), false],
    ];
    for (const [failure, fallsBack] of failures) {
      const fallback = scripted(ok);
      const tried = createResilientModel([
        { name: "a", model: scripted(failure), breaker: breaker() },
        { name: "b", model: fallback, breaker: breaker() },
      ]);
      await tried.complete({ messages: [] }).catch(() => undefined);
      expect(fallback.calls, failure.message).toBe(fallsBack ? 1 : 0);
    }

    const primary = scripted(down(), new ModelError("bad request", true, 400));
    const fallback = scripted(ok);
    const model = createResilientModel([
      { name: "a", model: primary, breaker: breaker() },
      { name: "b", model: fallback, breaker: breaker() },
    ]);
    await expect(model.complete({ messages: [] })).resolves.toEqual(ok);
    expect([primary.calls, fallback.calls]).toEqual([1, 1]);
    await expect(model.complete({ messages: [] })).rejects.toThrow("bad request");
    expect([primary.calls, fallback.calls]).toEqual([2, 1]);
  });

  it("fails fast while every circuit is open, saying when to try again, and closes on the first success", async () => {
    let t = 0;
    const events: string[] = [];
    const primary = scripted(down(), down(), ok);
    const model = createResilientModel(
      [{ name: "a", model: primary, breaker: new CircuitBreaker({ failureThreshold: 2, coolDownMs: 1000 }) }],
      { onOpen: (name) => events.push(`open ${name}`), onClose: (name) => events.push(`close ${name}`) },
      () => t,
    );
    await expect(model.complete({ messages: [] })).rejects.toBeInstanceOf(ModelUnavailableError);
    const second = await model.complete({ messages: [] }).catch((err: ModelUnavailableError) => err);
    expect(second).toMatchObject({ retryAt: 1000, message: "the model endpoint answered 503: down" });
    t = 500;
    await expect(model.complete({ messages: [] })).rejects.toMatchObject({ retryAt: 1000 });
    expect(primary.calls).toBe(2);
    t = 1000;
    await expect(model.complete({ messages: [] })).resolves.toEqual(ok);
    expect(events).toEqual(["open a", "close a"]);
  });

  it("keeps the circuit closed for requests the endpoint refuses, and says whether the endpoint is away", async () => {
    let t = 0;
    const grammar = new ModelError(
      "the model endpoint failed while the model was writing a tool call (500)",
      true,
      500,
    );
    const primary = scripted(grammar, grammar, grammar, ok, new ModelError("boom", false, 500), down());
    const model = createResilientModel(
      [{ name: "a", model: primary, breaker: new CircuitBreaker({ failureThreshold: 2, coolDownMs: 1000 }) }],
      {},
      () => t,
    );
    for (let i = 0; i < 3; i++) await expect(model.complete({ messages: [] })).rejects.toBe(grammar);
    t = 10;
    await expect(model.complete({ messages: [] })).resolves.toEqual(ok);
    t = 20;
    // The endpoint answers, with an error of its own: not away; it answered a request at t = 10.
    await expect(model.complete({ messages: [] })).rejects.toMatchObject({ away: false, answeredAt: 10 });
    await expect(model.complete({ messages: [] })).rejects.toMatchObject({ away: true, answeredAt: 10 });
    // Open now: failing fast still tells why it opened.
    await expect(model.complete({ messages: [] })).rejects.toMatchObject({ away: true, retryAt: 1020 });
    expect(primary.calls).toBe(6);
  });
});
