import { describe, expect, it } from "vitest";
import { createLineSearch } from "./line-search.js";

const never = new AbortController().signal;
const settle = <T>(p: Promise<T>) => p.then(() => "done" as const).catch(() => "failed" as const);

describe("createLineSearch (worker threads; needs npm run build)", () => {
  it("matches lines with RE2 in a worker, (a+)+$ included, at most max", async () => {
    const search = createLineSearch();
    const text = `${"a".repeat(5000)}b\n${"a".repeat(40)}\nxyz\naaa`;
    expect(await search("(a+)+$", text, 10, never)).toEqual([1, 3]);
    expect(await search("(a+)+$", text, 1, never)).toEqual([1]);
  });

  it("refuses what RE2 does not do, with a reason, compiled off the event loop", async () => {
    const search = createLineSearch();
    await expect(search("(?<=a)b", "", 0, never)).rejects.toThrow(/RE2 syntax: no lookaround or backreferences/);
    await expect(search("(?<=a)b", "ab", 1, never)).rejects.toThrow(/RE2 syntax/);
    await expect(search("x".repeat(1001), "", 0, never)).rejects.toThrow(/longer than 1000 characters/);
  });

  it("stops a running search when its call is stopped (the timeout's way of stopping it)", async () => {
    const search = createLineSearch(1);
    expect(await search("a", "a", 1, never)).toEqual([0]);
    const stop = new AbortController();
    const pending = search("(?:a?){1000}a{1000}", `${"a".repeat(10_000)}\n`.repeat(200), 10, stop.signal);
    stop.abort();
    await expect(pending).rejects.toThrow(/grep was stopped/);
    // The one thread was busy for minutes with it: the next search runs only because it was terminated.
    expect(await search("a", "a", 1, never)).toEqual([0]);
  });

  it("runs at most `maxThreads` searches at once; the next waits, or gives up when its call is stopped", async () => {
    const search = createLineSearch(1);
    const slow = new AbortController();
    const running = settle(search("(?:a?){1000}a{1000}", `${"a".repeat(10_000)}\n`.repeat(200), 10, slow.signal));
    const gaveUp = new AbortController();
    const waiting = search("x", "x", 1, gaveUp.signal);
    let next: "pending" | "done" | "failed" = "pending";
    const queued = settle(search("x", "x", 1, never)).then((outcome) => {
      next = outcome;
    });
    // Long enough for a second thread to start and answer, were one allowed: a fresh pool's does twice.
    const control = createLineSearch();
    for (let i = 0; i < 2; i++) expect(await control("x", "x", 1, never)).toEqual([0]);
    expect(next).toBe("pending");
    gaveUp.abort();
    await expect(waiting).rejects.toThrow(/grep was stopped/);
    expect(next).toBe("pending");
    slow.abort();
    expect(await running).toBe("failed");
    await queued;
    expect(next).toBe("done");
  });
});
