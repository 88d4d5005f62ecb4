import { describe, expect, it } from "vitest";
import { OutboxTail } from "./outbox-tail.js";
import type { OutboundMessage } from "./types.js";

const msg = (text: string): OutboundMessage => ({ channel: "web", chatId: "main", text, kind: "reply" });

describe("following a channel's outbox", () => {
  it("delivers each row once, also one committed after a higher id was seen, and none from before its start", async () => {
    const rows = [{ id: 3, msg: msg("before the start") }];
    let now = 1_000_000;
    const delivered: string[] = [];
    const asked: number[] = [];
    const journal = {
      lastOutboxId: async () => Math.max(...rows.map((r) => r.id)),
      outboxAfter: async (_: string, afterId: number) => {
        asked.push(afterId);
        return rows.filter((r) => r.id > afterId).sort((a, b) => a.id - b.id);
      },
    };
    const tail = new OutboxTail(
      "web",
      journal,
      (m) => delivered.push(m.text),
      undefined,
      () => now,
    );
    rows.push({ id: 5, msg: msg("five") });
    tail.wake();
    await tail.idle();
    // Id 4 was handed out before 5 but committed after it (another process's slower transaction).
    rows.push({ id: 4, msg: msg("four, late") });
    tail.wake();
    await tail.idle();
    tail.wake();
    await tail.idle();
    expect(delivered).toEqual(["five", "four, late"]);
    // A minute on, what was seen is settled: the tail reads only past it.
    now += 61_000;
    tail.wake();
    await tail.idle();
    rows.push({ id: 6, msg: msg("six") });
    tail.wake();
    await tail.idle();
    expect(delivered).toEqual(["five", "four, late", "six"]);
    expect(asked.at(-1)).toBe(5);
  });
});
