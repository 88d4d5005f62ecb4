/**
 * A silent network partition between pincer and PostgreSQL: packets vanish, no connection is closed, the server
 * stays up. Every store call must fail within the query timeout instead of hanging, and work again once the network
 * is back. Real PostgreSQL behind a TCP relay on 127.0.0.1 that can drop everything.
 */
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openPostgresStore } from "../src/store/postgres/postgres-store.js";
import { hasPostgres, startPostgres, type TestPostgres } from "./helpers/postgres.js";
import { inbound } from "./helpers/store-conformance.js";
import { until } from "./helpers/until.js";

/** Relays TCP to `port`; while `silent`, every byte either way is dropped and no socket is closed. */
async function startRelay(port: number) {
  const sockets = new Set<Socket>();
  let silent = false;
  const server: Server = createServer((client) => {
    const upstream = createConnection({ host: "127.0.0.1", port });
    for (const [from, to] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      sockets.add(from);
      from.on("data", (chunk) => {
        if (!silent) to.write(chunk);
      });
      from.on("error", () => {});
      from.on("close", () => {
        sockets.delete(from);
        to.destroy();
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as { port: number }).port,
    partition: () => {
      silent = true;
    },
    heal: () => {
      silent = false;
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** `promise`, or a rejection naming what hung once `ms` passed. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} still hangs after ${ms} ms`)), ms);
  });
  return Promise.race([promise, hung]).finally(() => clearTimeout(timer));
}

describe.skipIf(!hasPostgres())("the store across a silent network partition", () => {
  let server: TestPostgres | undefined;
  beforeAll(async () => {
    server = await startPostgres();
  }, 90_000);
  afterAll(() => server?.stop());

  it("fails each query within its timeout instead of hanging, and works again once the network is back", async () => {
    const url = await (server as TestPostgres).newDatabase();
    const relay = await startRelay((server as TestPostgres).port);
    const store = await openPostgresStore(url.replace(/:\d+\//, `:${relay.port}/`), {
      queryTimeoutMs: 1000,
      onError: () => {},
    });
    try {
      expect(await store.journal.acceptInbound(inbound("1", "before"))).toBe(true);
      relay.partition();
      const started = performance.now();
      const results = await within(
        Promise.allSettled([
          store.journal.acceptInbound(inbound("1", "during")),
          store.conversations.append("telegram:1", [{ role: "user", content: "during" }]),
          store.memory.search("before", { sessionKey: "telegram:1", memoryFile: false, limit: 5 }),
        ]),
        10_000,
        "a query during the partition",
      );
      expect(results.map((r) => r.status)).toEqual(["rejected", "rejected", "rejected"]);
      expect(performance.now() - started).toBeLessThan(5000);
      relay.heal();
      // The connections that timed out were dropped: the pool opens new ones.
      await until(
        () => store.journal.acceptInbound(inbound("1", "after")).catch(() => false),
        "the store to work after the partition",
        20_000,
      );
    } finally {
      relay.heal();
      await store.close().catch(() => {});
      await relay.close();
    }
  }, 60_000);
});
