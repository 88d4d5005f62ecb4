/**
 * What other database roles can learn of a cluster, on a real PostgreSQL: pincer running as an ordinary role that owns
 * its database (the grants docs/clustering.md asks for), a role with no grants listening in and forging notifications,
 * and the same role once CONNECT is revoked from PUBLIC as the docs say.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ClusterWork } from "../src/store/postgres/cluster-work.js";
import { openPostgresStore } from "../src/store/postgres/postgres-store.js";
import type { StoreChange } from "../src/store/store.js";
import { hasPostgres, startPostgres, type TestPostgres } from "./helpers/postgres.js";
import { inbound } from "./helpers/store-conformance.js";
import { until } from "./helpers/until.js";

async function as<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  client.on("error", () => {});
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end().catch(() => {});
  }
}

describe.skipIf(!hasPostgres())("other roles on pincer's PostgreSQL", () => {
  let server: TestPostgres | undefined;
  let admin: string;
  let pincerUrl: string;
  let spyUrl: string;
  beforeAll(async () => {
    server = await startPostgres();
    admin = server.url;
    // As docs/clustering.md sets a deployment up: an ordinary role owning its database, nothing more.
    await as(admin, async (c) => {
      await c.query("CREATE ROLE pincer_app LOGIN");
      await c.query("CREATE DATABASE pincer_roles OWNER pincer_app");
      await c.query("CREATE ROLE spy LOGIN");
    });
    const base = admin.replace(/\/postgres$/, "/pincer_roles");
    pincerUrl = base.replace("postgres@", "pincer_app@");
    spyUrl = base.replace("postgres@", "spy@");
  }, 90_000);
  afterAll(() => server?.stop());

  it("hear only bare wake-ups, and what they send is taken as a hint that names nothing", async () => {
    const store = await openPostgresStore(pincerUrl);
    const work = new ClusterWork(pincerUrl);
    const spy = new pg.Client({ connectionString: spyUrl });
    const heard: pg.Notification[] = [];
    const changes: StoreChange[] = [];
    const stopWatching = await store.watch?.((change) => changes.push(change));
    try {
      await spy.connect();
      spy.on("notification", (n) => heard.push(n));
      await spy.query("LISTEN pincer_inbox; LISTEN pincer_outbox; LISTEN pincer_work");
      // No grants: the tables are closed to it.
      await expect(spy.query("SELECT payload FROM inbox")).rejects.toThrow(/permission denied/);

      expect(await store.journal.acceptInbound(inbound("42", "my bank pin is 1234"))).toBe(true);
      await store.journal.recordOutbound({ channel: "telegram", chatId: "42", text: "noted", kind: "reply" });
      await work.announce();
      await until(() => heard.length >= 3 && changes.length >= 2, "the three notifications");
      expect(heard.map((n) => [n.channel, n.payload]).sort()).toEqual([
        ["pincer_inbox", ""],
        ["pincer_outbox", ""],
        ["pincer_work", ""],
      ]);

      // Forged ones wake the processes (they look in the tables and find nothing new), and name nothing to them.
      changes.length = 0;
      await spy.query("SELECT pg_notify('pincer_inbox', 'telegram:999'), pg_notify('pincer_outbox', 'web')");
      await until(() => changes.length >= 2, "the forged notifications to arrive");
      expect(changes).toEqual([{ kind: "inbox" }, { kind: "outbox" }]);
    } finally {
      await spy.end().catch(() => {});
      await stopWatching?.();
      await work.close();
      await store.close();
    }
  });

  it("cannot even connect once CONNECT is revoked from PUBLIC, while pincer's role works on", async () => {
    await as(admin, (c) => c.query("REVOKE CONNECT, TEMPORARY ON DATABASE pincer_roles FROM PUBLIC"));
    await expect(as(spyUrl, (c) => c.query("LISTEN pincer_inbox"))).rejects.toThrow(
      /permission denied for database "pincer_roles"/,
    );
    const store = await openPostgresStore(pincerUrl);
    try {
      expect(await store.journal.acceptInbound(inbound("43", "still works"))).toBe(true);
    } finally {
      await store.close();
    }
  });
});
