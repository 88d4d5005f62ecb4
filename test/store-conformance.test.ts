import { rmSync, statSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openPostgresStore } from "../src/store/postgres/postgres-store.js";
import { openSqliteStore } from "../src/store/sqlite/sqlite-store.js";
import type { StoreChange } from "../src/store/store.js";
import { tempHome } from "./helpers/app.js";
import { hasPostgres, startPostgres, type TestPostgres } from "./helpers/postgres.js";
import { describeStoreConformance, inbound } from "./helpers/store-conformance.js";
import { until } from "./helpers/until.js";

const homes: string[] = [];
afterAll(() => {
  for (const home of homes) rmSync(home, { recursive: true, force: true });
});

describeStoreConformance("SQLite", async () => {
  const home = tempHome("pincer-store-");
  homes.push(home);
  return async (options) => openSqliteStore(join(home, "pincer.db"), options);
});

describe("the SQLite outbox", () => {
  it("records a long reply's parts without rewriting its text: the write-ahead log stays small", async () => {
    const home = tempHome("pincer-store-");
    homes.push(home);
    const file = join(home, "pincer.db");
    const store = await openSqliteStore(file);
    const wal = new Database(file);
    try {
      const id = await store.journal.recordOutbound({
        channel: "telegram",
        chatId: "1",
        text: "x".repeat(5_000_000),
        kind: "reply",
      });
      wal.pragma("wal_checkpoint(TRUNCATE)");
      for (let part = 1; part <= 20; part++) await store.journal.markOutboundPartSent(id, part);
      // Rewriting the 5 MB row writes it whole to the write-ahead log each time (the file keeps its size).
      expect(statSync(`${file}-wal`).size).toBeLessThan(1_000_000);
      expect((await store.journal.outboxHeads("telegram"))[0]).toMatchObject({ id, partsSent: 20 });
      expect((await store.journal.pendingOutbound("telegram"))[0]).toMatchObject({ id, partsSent: 20 });
      await store.journal.markOutboundSent(id);
      expect(await store.journal.outboxHeads("telegram")).toEqual([]);
    } finally {
      wal.close();
      await store.close();
    }
  });
});

describe.skipIf(!hasPostgres())("on PostgreSQL", () => {
  let server: TestPostgres | undefined;
  beforeAll(async () => {
    server = await startPostgres();
  }, 60_000);
  afterAll(() => server?.stop());
  describeStoreConformance("PostgreSQL", async () => {
    const url = await (server as TestPostgres).newDatabase();
    return async (options) => openPostgresStore(url, options);
  });

  it("tells every process of a reply or a message another one recorded, also after the server restarted", async () => {
    const pg = server as TestPostgres;
    const url = await pg.newDatabase();
    const [listener, writer] = [await openPostgresStore(url), await openPostgresStore(url)];
    const changes: StoreChange[] = [];
    const stop = await listener.watch?.((change) => changes.push(change));
    try {
      await writer.journal.recordOutbound({ channel: "discord", chatId: "1", text: "hi", kind: "reply" });
      await writer.journal.acceptInbound(inbound("1", "hello"));
      await until(() => changes.length === 2, "two notifications");
      expect(changes).toEqual([{ kind: "outbox" }, { kind: "inbox" }]);
      await pg.restart();
      await until(
        async () => {
          // The writer's first try may meet a connection the restart cut; the pool opens a new one.
          await writer.journal
            .recordOutbound({ channel: "telegram", chatId: "1", text: "again", kind: "reply" })
            .catch(() => undefined);
          return changes.filter((c) => c.kind === "outbox").length >= 2;
        },
        "a notification after the restart",
        20_000,
      );
    } finally {
      await stop?.();
      await listener.close();
      await writer.close();
    }
  }, 60_000);
});
