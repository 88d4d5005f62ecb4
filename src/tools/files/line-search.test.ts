import { describe, expect, it } from "vitest";
import { LineSearcher, SearchSlots } from "./line-search.js";

describe("LineSearcher", () => {
  it("matches lines with RE2 in a worker, (a+)+$ included, at most max", async () => {
    const searcher = new LineSearcher("(a+)+$");
    try {
      const text = `${"a".repeat(5000)}b\n${"a".repeat(40)}\nxyz\naaa`;
      expect(await searcher.search(text, 10)).toEqual([1, 3]);
      expect(await searcher.search(text, 1)).toEqual([1]);
    } finally {
      await searcher.close();
    }
  });

  it("refuses what RE2 does not do, with a reason, compiled off the event loop", async () => {
    const searcher = new LineSearcher("(?<=a)b");
    await expect(searcher.ready).rejects.toThrow(/RE2 syntax: no lookaround or backreferences/);
    await expect(searcher.search("ab", 1)).rejects.toThrow(/RE2 syntax/);
    await searcher.close();
    expect(() => new LineSearcher("x".repeat(1001))).toThrow(/longer than 1000 characters/);
  });

  it("fails a pending search when it is closed (the timeout's way of stopping it)", async () => {
    const searcher = new LineSearcher("(?:a?){1000}a{1000}");
    const pending = searcher.search(`${"a".repeat(10_000)}\n`.repeat(200), 10);
    await searcher.close();
    await expect(pending).rejects.toThrow(/stopped/);
  });
});

describe("SearchSlots", () => {
  it("lets `size` searches run and the next wait until one is released, or give up on abort", async () => {
    const slots = new SearchSlots(2);
    const never = new AbortController().signal;
    const a = await slots.acquire(never);
    await slots.acquire(never);
    let third = false;
    const waiting = slots.acquire(never).then((release) => {
      third = true;
      return release;
    });
    const aborted = new AbortController();
    const gaveUp = slots.acquire(aborted.signal);
    await new Promise((r) => setImmediate(r));
    expect(third).toBe(false);
    aborted.abort();
    await expect(gaveUp).rejects.toThrow(/stopped/);
    a();
    a(); // a second release of the same slot changes nothing
    (await waiting)();
    expect(third).toBe(true);
  });
});
