import { describe, expect, it } from "vitest";
import type { InboundMessage } from "../bus/types.js";
import type { Fence } from "../store/cluster.js";
import { openDatabase } from "../store/sqlite/database.js";
import { openSqliteStore } from "../store/sqlite/sqlite-store.js";
import { fenceTurnWrites } from "./fenced-writes.js";

const msg: InboundMessage = {
  id: "m1",
  channel: "telegram",
  chatId: "42",
  senderId: "42",
  sessionKey: "telegram:42",
  senderName: "owner",
  text: "paused",
  media: [],
  isGroup: false,
  mentionsBot: false,
  receivedAt: 1,
};

describe("fenced turn writes", () => {
  it("writes a turn under the fence it began with, not the newer one its process took again later", async () => {
    const store = openSqliteStore(openDatabase(":memory:"));
    await store.journal.acceptInbound(msg);
    let current: Fence | undefined = { name: "turn:telegram:42", epoch: 1 };
    const usedEpochs: number[] = [];
    const writes = fenceTurnWrites(
      store,
      () => current,
      (fence) => {
        usedEpochs.push(fence.epoch);
        return { ...store, recordTurnStart: (m: InboundMessage) => store.journal.recordTurnStart(m) };
      },
    );
    await writes.journal.recordTurnStart(msg);
    // Paused past the lease: another process held it (epoch 2), and this one took it again (epoch 3).
    current = { name: "turn:telegram:42", epoch: 3 };
    await writes.steps.started(msg, "c1");
    await writes.turns.finishTurn(msg, [], undefined);
    // The next turn of the message's conversation begins under the fence held now.
    const next = { ...msg, id: "m2" };
    await store.journal.acceptInbound(next);
    await writes.journal.recordTurnStart(next);
    current = undefined;
    await expect(writes.steps.started({ ...msg, id: "m3" }, "c2")).rejects.toThrow(/taken over/);
    expect(usedEpochs).toEqual([1, 1, 1, 3]);
  });
});
