import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { backoffMs, type DraftOps, DraftStream, draftIntervalMs, nextCallAt, nextDraftStep } from "./draft-stream.js";

class RateLimited extends Error {
  constructor(readonly retryAfterMs: number) {
    super("429");
  }
}
class Refused extends Error {}

/** A platform in memory: messages by id, every call logged with the (fake) time it came. */
function platform(limit = 10, native = false) {
  const messages = new Map<string, string>();
  const log: Array<{ at: number; call: string; text: string }> = [];
  const failures: Error[] = [];
  let next = 0;
  const take = (call: string, text: string) => {
    log.push({ at: Date.now(), call, text });
    const failure = failures.shift();
    if (failure) throw failure;
  };
  const ops: DraftOps = {
    parts: (text) => text.match(new RegExp(`[\\s\\S]{1,${limit}}`, "g")) ?? [],
    ...(native ? { native: async (part: string) => take("native", part) } : {}),
    send: async (part) => {
      take("send", part);
      const id = String(++next);
      messages.set(id, part);
      return id;
    },
    edit: async (id, part) => {
      take("edit", part);
      if (messages.get(id) === part) throw new Error("not modified");
      messages.set(id, part);
    },
    remove: async (id) => {
      take("remove", id);
      messages.delete(id);
    },
    retryAfterMs: (err) => (err instanceof RateLimited ? err.retryAfterMs : undefined),
    isUnchanged: (err) => err instanceof Error && err.message === "not modified",
    isRefusal: (err) => err instanceof Refused,
  };
  return { ops, messages, log, failures };
}

describe("DraftStream", () => {
  beforeEach(() => vi.useFakeTimers({ now: 0 }));
  afterEach(() => vi.useRealTimers());

  it("shows the first words at once, then the latest text at most once per interval", async () => {
    const p = platform(100);
    const draft = new DraftStream(p.ops, { intervalMs: 1000 });
    draft.update("Hel");
    await vi.advanceTimersByTimeAsync(0);
    expect(p.log).toEqual([{ at: 0, call: "send", text: "Hel" }]);
    for (const text of ["Hell", "Hello", "Hello w", "Hello wo"]) {
      draft.update(text);
      await vi.advanceTimersByTimeAsync(100);
    }
    expect(p.log).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1000);
    expect(p.log.map((c) => c.text)).toEqual(["Hel", "Hello wo"]);
    expect(await draft.close()).toEqual(["1"]);
    draft.update("Hello world");
    await vi.advanceTimersByTimeAsync(5000);
    expect(p.log).toHaveLength(2);
  });

  it("moves on to a new message at the limit, completing the full one first; stores each id as it is posted", async () => {
    const p = platform(5);
    const stored: string[][] = [];
    const draft = new DraftStream(p.ops, { intervalMs: 1000, onIds: async (ids) => void stored.push(ids) });
    draft.update("abc");
    await vi.advanceTimersByTimeAsync(0);
    draft.update("abcdefgh");
    await vi.advanceTimersByTimeAsync(3000);
    expect(p.log.map((c) => `${c.call} ${c.text}`)).toEqual(["send abc", "edit abcde", "send fgh"]);
    expect(p.log.map((c) => c.at)).toEqual([0, 1000, 2000]);
    expect(stored).toEqual([["1"], ["1", "2"]]);
    expect(await draft.close()).toEqual(["1", "2"]);
  });

  it("waits out a 429's retry_after, backs off without one, and stops at a refusal", async () => {
    const p = platform(100);
    const errors: unknown[] = [];
    const draft = new DraftStream(p.ops, { intervalMs: 1000, onError: (err) => errors.push(err) });
    draft.update("a");
    await vi.advanceTimersByTimeAsync(0);
    p.failures.push(new RateLimited(5000));
    draft.update("ab");
    await vi.advanceTimersByTimeAsync(1000);
    draft.update("abc");
    await vi.advanceTimersByTimeAsync(4999);
    expect(p.log.map((c) => c.at)).toEqual([0, 1000]);
    await vi.advanceTimersByTimeAsync(1);
    expect(p.log.map((c) => `${c.at} ${c.text}`)).toEqual(["0 a", "1000 ab", "6000 abc"]);
    p.failures.push(new Refused("message to edit not found"));
    draft.update("abcd");
    await vi.advanceTimersByTimeAsync(10_000);
    draft.update("abcde");
    await vi.advanceTimersByTimeAsync(10_000);
    expect(p.log).toHaveLength(4);
    expect(errors).toHaveLength(2);
  });

  it("a native draft shows the last part without posting; refused, it goes on as messages", async () => {
    const p = platform(5, true);
    const draft = new DraftStream(p.ops, { intervalMs: 1000 });
    draft.update("abc");
    await vi.advanceTimersByTimeAsync(0);
    draft.update("abcdefg");
    await vi.advanceTimersByTimeAsync(1000);
    expect(p.log.map((c) => `${c.call} ${c.text}`)).toEqual(["native abc", "native fg"]);
    p.failures.push(new Refused("drafts are for private chats"));
    draft.update("abcdefgh");
    await vi.advanceTimersByTimeAsync(1000);
    draft.update("abcdefghi");
    await vi.advanceTimersByTimeAsync(3000);
    expect(p.log.map((c) => `${c.call} ${c.text}`).slice(3)).toEqual(["send abcde", "send fghi"]);
    expect(await draft.close()).toEqual(["1", "2"]);
  });

  it("goes on in the messages a draft had before a restart, and discard deletes them", async () => {
    const p = platform(100);
    p.messages.set("7", "old partial text");
    const draft = new DraftStream(p.ops, { intervalMs: 1000, messageIds: ["7"] });
    draft.update("New");
    await vi.advanceTimersByTimeAsync(0);
    expect(p.messages.get("7")).toBe("New");
    await draft.discard();
    expect(p.messages.size).toBe(0);
  });
});

describe("draft pace", () => {
  it("waits an interval after the last call, longer in groups, and never before a retry_after is over", () => {
    expect(draftIntervalMs(true)).toBe(1000);
    expect(draftIntervalMs(false)).toBeGreaterThan(draftIntervalMs(true));
    expect(nextCallAt(undefined, 1000, 0)).toBe(0);
    expect(nextCallAt(5000, 1000, 0)).toBe(6000);
    expect(nextCallAt(5000, 1000, 9000)).toBe(9000);
  });

  it("backs off as the platform asks, else doubling up to a cap", () => {
    expect(backoffMs(1, 1000, 7000)).toBe(7000);
    expect(backoffMs(1, 1000)).toBe(1000);
    expect(backoffMs(3, 1000)).toBe(4000);
    expect(backoffMs(20, 1000)).toBe(30_000);
  });

  it("posts the first part, edits the last message as it grows, completes it before moving on", () => {
    expect(nextDraftStep([], [])).toBeUndefined();
    expect(nextDraftStep([], ["Hel"])).toEqual({ kind: "send", index: 0 });
    expect(nextDraftStep(["Hel"], ["Hello"])).toEqual({ kind: "edit", index: 0 });
    expect(nextDraftStep(["Hello"], ["Hello"])).toBeUndefined();
    // Past the limit: the first message is completed, then the second is posted.
    expect(nextDraftStep(["Hello wo"], ["Hello world", "and more"])).toEqual({ kind: "edit", index: 0 });
    expect(nextDraftStep(["Hello world"], ["Hello world", "and more"])).toEqual({ kind: "send", index: 1 });
    // A full message is not edited again while the draft grows (its rendering may shift a little).
    expect(nextDraftStep(["Hello world", "and"], ["Hello world!", "and more"])).toEqual({ kind: "edit", index: 1 });
    // A text that shrank (the next round of a turn starts over) edits the last message it still has.
    expect(nextDraftStep(["Long text"], ["New"])).toEqual({ kind: "edit", index: 0 });
  });
});
