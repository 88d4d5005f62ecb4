import { Writable } from "node:stream";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { openDatabase } from "../store/sqlite/database.js";
import { openSqliteStore } from "../store/sqlite/sqlite-store.js";
import type { OutboundHandler } from "./delivery.js";
import { ChannelSender } from "./outbox-sender.js";
import { DEFAULT_RETRY_TIMING, Switchboard } from "./switchboard.js";
import type { DeliveryOutcome, OutboundMessage } from "./types.js";

const reply = { channel: "telegram" as const, chatId: "1", text: "three parts", kind: "reply" as const };

async function deliver(handler: OutboundHandler) {
  const db = openDatabase(":memory:");
  const journal = openSqliteStore(db).journal;
  const id = await journal.recordOutbound(reply);
  // A pending row's parts are counted beside it (outbox_progress).
  const row = () =>
    db
      .prepare(
        "SELECT status, max(o.parts_sent, coalesce(p.parts_sent, 0)) AS parts FROM outbox o LEFT JOIN outbox_progress p ON p.id = o.id WHERE o.id = ?",
      )
      .get(id);
  const outcomes: DeliveryOutcome[] = [];
  const sent: Array<{ waitedMs: number; sendMs: number }> = [];
  const seen: unknown[] = [];
  const sender = new ChannelSender(
    "telegram",
    (msg, delivery) =>
      handler(msg, {
        ...delivery,
        partsSent: delivery.partsSent,
        signal: delivery.signal,
        markPartSent: async (last) => {
          await delivery.markPartSent(last);
          seen.push(row());
        },
      }),
    journal,
    { ...DEFAULT_RETRY_TIMING, baseDelayMs: 60_000 },
    (_row, outcome) => outcomes.push(outcome),
    pino(
      { level: "debug" },
      new Writable({
        write(chunk, _encoding, done) {
          const line = JSON.parse(String(chunk));
          if (line.msg === "sent") sent.push({ waitedMs: line.waitedMs, sendMs: line.sendMs });
          done();
        },
      }),
    ),
  );
  const deadline = Date.now() + 5000;
  while (outcomes.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  await sender.stop();
  return { outcomes, seen, final: row(), sent };
}

describe("ChannelSender and the parts of a message", () => {
  it("records each part as it goes out, and the last one together with the row being sent", async () => {
    const { outcomes, seen, final, sent } = await deliver(async (_msg, delivery) => {
      for (let part = 0; part < 3; part++) await delivery.markPartSent(part === 2);
      await new Promise((resolve) => setTimeout(resolve, 20));
      return { messageIds: ["a", "b", "c"] };
    });
    // The debug line's timings: how long the row waited, how long the platform took.
    expect(sent).toEqual([{ waitedMs: expect.any(Number), sendMs: expect.any(Number) }]);
    expect(sent[0].waitedMs).toBeGreaterThanOrEqual(0);
    expect(sent[0].sendMs).toBeGreaterThanOrEqual(15);
    expect(seen).toEqual([
      { status: "pending", parts: 1 },
      { status: "pending", parts: 2 },
      { status: "sent", parts: 3 },
    ]);
    expect(final).toEqual({ status: "sent", parts: 3 });
    expect(outcomes).toEqual([{ status: "sent", messageIds: ["a", "b", "c"] }]);
  });

  it("keeps a message whose last part went out as sent, even if the handler fails afterwards", async () => {
    const { outcomes, final } = await deliver(async (_msg, delivery) => {
      await delivery.markPartSent(true);
      throw new Error("failed after the last part");
    });
    expect(final).toEqual({ status: "sent", parts: 1 });
    expect(outcomes).toEqual([{ status: "sent", messageIds: [] }]);
  });

  it("still retries a message that failed before its last part, from the part that did not go out", async () => {
    const { outcomes, final, sent } = await deliver(async (_msg, delivery) => {
      await delivery.markPartSent(false);
      throw new Error("the platform is down");
    });
    expect(final).toEqual({ status: "pending", parts: 1 });
    expect(outcomes).toEqual([{ status: "failed", error: "the platform is down" }]);
    expect(sent).toEqual([]);
  });

  it("dead-letters a message the handler overflows its stack on at once, instead of retrying the same crash", async () => {
    const { outcomes, final } = await deliver(async () => {
      const deep = (n: number): number => deep(n + 1) + 1;
      deep(0);
    });
    expect(final).toEqual({ status: "dead", parts: 0 });
    expect(outcomes).toEqual([{ status: "refused", error: "Maximum call stack size exceeded" }]);
  });
});

describe("an edit of an earlier outbox row", () => {
  it("goes to that row's first platform message, also after a restart; one never posted to the chat is refused once", async () => {
    const db = openDatabase(":memory:");
    const journal = openSqliteStore(db).journal;
    const seen: OutboundMessage[] = [];
    let next = 100;
    const handler: OutboundHandler = async (msg, delivery) => {
      seen.push(msg);
      const ids = [String(next++), String(next++)];
      await delivery.markPartSent(false, ids.slice(0, 1));
      await delivery.markPartSent(true, ids.slice(1));
      return { messageIds: ids };
    };
    const bus = new Switchboard({ journal });
    await bus.subscribeOutbound("telegram", handler);
    const first = await bus.publishOutbound({ ...reply, buttons: [[{ label: "Yes", data: "b:0" }]] });
    expect(first).toMatchObject({ status: "sent", messageIds: ["100", "101"], outboxId: expect.any(Number) });
    await bus.unsubscribeOutbound("telegram");
    const again = new Switchboard({ journal });
    await again.subscribeOutbound("telegram", handler);
    const editOf = { outboxId: first.outboxId as number };
    expect(await again.publishOutbound({ ...reply, text: "done", editOf })).toMatchObject({ status: "sent" });
    expect(seen[1]).toMatchObject({ text: "done", editOf: { messageId: "100" } });
    const elsewhere = await again.publishOutbound({ ...reply, chatId: "2", text: "not here", editOf });
    expect(elsewhere).toMatchObject({ status: "refused", error: expect.stringContaining("never posted to this chat") });
    expect(seen).toHaveLength(2);
    await again.unsubscribeOutbound("telegram");
  });
});
