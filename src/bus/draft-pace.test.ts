import { describe, expect, it } from "vitest";
import { backoffMs, draftIntervalMs, nextCallAt, nextDraftStep } from "./draft-pace.js";

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
