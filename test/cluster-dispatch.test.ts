import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { InboundMessage } from "../src/bus/types.js";
import { leaseTiming } from "../src/cluster/lease-policy.js";
import { ClusterMember } from "../src/cluster/member.js";
import { TurnDispatcher, turnLeaseName } from "../src/cluster/turn-dispatcher.js";
import { FencedOutError } from "../src/store/cluster.js";
import { type ClusterStore, openClusterStore } from "../src/store/postgres/cluster-store.js";
import { ClusterWork } from "../src/store/postgres/cluster-work.js";
import { pgSql } from "../src/store/postgres/db.js";
import { hasPostgres, startPostgres, type TestPostgres } from "./helpers/postgres.js";
import { until } from "./helpers/until.js";

const havePostgres = hasPostgres();
const TTL = 3000;
const quiet = { info: () => {}, warn: () => {}, error: () => {} };

/**
 * The inbox columns the dispatcher reads (the PostgreSQL engine's table has these and more):
 * each process's "worker" here runs a turn by recording it under the conversation's fence and
 * marking the message done in the same fenced transaction, as finishTurn does.
 */
const INBOX = `
  CREATE TABLE inbox (
    seq bigserial UNIQUE,
    id text PRIMARY KEY,
    session_key text NOT NULL,
    payload text NOT NULL,
    received_at bigint NOT NULL,
    status text NOT NULL DEFAULT 'pending'
  );
  CREATE TABLE turns_run (n bigserial PRIMARY KEY, process text, session_key text, msg_id text, epoch bigint);
`;

function message(session: number, n: number): InboundMessage {
  return {
    id: String(n),
    channel: "telegram",
    chatId: String(session),
    senderId: "1",
    senderName: "ada",
    text: `message ${n}`,
    media: [],
    isGroup: false,
    mentionsBot: false,
    receivedAt: 1_000_000 + n,
    sessionKey: `telegram:${session}`,
  };
}

interface Proc {
  name: string;
  store: ClusterStore;
  member: ClusterMember;
  dispatcher: TurnDispatcher;
  pool: pg.Pool;
  work: ClusterWork;
  /** Set to make this process hang in every turn (as if paused mid-turn), or stop working at all. */
  stall: boolean;
  dropped: string[];
  fencedOut: string[];
}

describe.skipIf(!havePostgres)("clustered mode's turn dispatch on a real PostgreSQL", () => {
  let server: TestPostgres;
  let url: string;
  let admin: pg.Pool;
  const procs: Proc[] = [];

  beforeAll(async () => {
    server = await startPostgres();
  }, 90_000);
  afterAll(() => server?.stop());
  afterEach(async () => {
    for (const p of procs.splice(0)) {
      p.stall = true;
      await p.dispatcher.stop();
      await p.member.stop();
      await p.store.close().catch(() => {});
      await p.pool.end();
      await p.work.close();
    }
    await admin?.end();
  });

  async function freshDatabase(): Promise<void> {
    url = await server.newDatabase();
    admin = new pg.Pool({ connectionString: url });
    admin.on("error", () => {});
    await admin.query(INBOX);
  }

  async function accept(msg: InboundMessage): Promise<void> {
    await admin.query("INSERT INTO inbox (id, session_key, payload, received_at) VALUES ($1, $2, $3, $4)", [
      `${msg.channel}:${msg.chatId}:${msg.id}`,
      msg.sessionKey,
      JSON.stringify(msg),
      msg.receivedAt,
    ]);
    await admin.query("SELECT pg_notify('pincer_work', '')");
  }

  async function startProc(name: string, cap = 4): Promise<Proc> {
    const store = await openClusterStore(url, { queryTimeoutMs: 1000 });
    const pool = new pg.Pool({ connectionString: url, max: 4, query_timeout: 1000 });
    pool.on("error", () => {});
    const member = new ClusterMember({
      store,
      process: { id: name, host: "test", pid: process.pid },
      timing: leaseTiming(TTL),
      log: quiet,
    });
    const work = new ClusterWork(url);
    let running = 0;
    const proc: Proc = {
      name,
      work,
      store,
      member,
      pool,
      stall: false,
      dropped: [],
      fencedOut: [],
      dispatcher: undefined as never,
    };
    // One turn at a time per conversation, as the worker's lanes do.
    const lanes = new Map<string, Promise<void>>();
    const runTurn = async (msg: InboundMessage) => {
      // Taken when the turn starts and used for all its writes, however long the turn takes.
      const fence = dispatcher.fence(msg.sessionKey);
      if (!fence) return;
      await new Promise((resolve) => setTimeout(resolve, 20));
      while (proc.stall) await new Promise((resolve) => setTimeout(resolve, 50));
      // The engine's own pool makes the fenced writes, as the PostgreSQL engine does with its pool.
      await pgSql(pool, fence).transaction(async (tx) => {
        await tx.run("INSERT INTO turns_run (process, session_key, msg_id, epoch) VALUES ($1, $2, $3, $4)", [
          name,
          msg.sessionKey,
          msg.id,
          fence.epoch,
        ]);
        await tx.run("UPDATE inbox SET status = 'done' WHERE id = $1", [`telegram:${msg.chatId}:${msg.id}`]);
      });
      dispatcher.finished(msg);
    };
    const dispatcher = new TurnDispatcher({
      work,
      member,
      run: (msg) => {
        running++;
        const previous = lanes.get(msg.sessionKey) ?? Promise.resolve();
        const next = previous
          .then(() => runTurn(msg))
          .catch((err: unknown) => {
            if (err instanceof FencedOutError) proc.fencedOut.push(msg.id);
          })
          .finally(() => running--);
        lanes.set(msg.sessionKey, next);
      },
      drop: (key) => proc.dropped.push(key),
      room: () => cap,
      log: quiet,
    });
    proc.dispatcher = dispatcher;
    member.start();
    dispatcher.start();
    procs.push(proc);
    return proc;
  }

  async function runs(): Promise<Array<{ process: string; session_key: string; msg_id: string; epoch: string }>> {
    return (await admin.query("SELECT process, session_key, msg_id, epoch FROM turns_run ORDER BY n")).rows;
  }

  it("runs every message once, each conversation in order and on one process at a time", async () => {
    await freshDatabase();
    const sent: InboundMessage[] = [];
    for (let n = 1; n <= 40; n++) sent.push(message(n % 5, n));
    for (const msg of sent) await accept(msg);
    // Two conversations at a time each: five waiting ones cannot all go to one process.
    await Promise.all(["p1", "p2", "p3"].map((name) => startProc(name, 2)));
    await until(async () => (await runs()).length >= 40, "every turn", 30_000);
    // Nothing pending and every conversation given back (no turn lease left behind): no turn is left to run twice.
    const left =
      "SELECT (SELECT count(*) FROM inbox WHERE status = 'pending') + (SELECT count(*) FROM cluster_leases) AS n";
    await until(async () => Number((await admin.query(left)).rows[0].n) === 0, "nothing left to run", 30_000);
    const done = await runs();
    expect(done.map((r) => `${r.session_key}/${r.msg_id}`).sort()).toEqual(
      sent.map((m) => `${m.sessionKey}/${m.id}`).sort(),
    );
    for (let s = 0; s < 5; s++) {
      const order = done.filter((r) => r.session_key === `telegram:${s}`).map((r) => Number(r.msg_id));
      expect(order).toEqual([...order].sort((a, b) => a - b));
    }
    // Work spread over more than one process (three of them race for five conversations).
    expect(new Set(done.map((r) => r.process)).size).toBeGreaterThan(1);
  }, 60_000);

  it("moves a conversation whose process hangs mid-turn past its lease to another, and fences the first out", async () => {
    await freshDatabase();
    const p1 = await startProc("p1");
    await accept(message(7, 1));
    await until(async () => (await runs()).length === 1, "the first turn");
    p1.stall = true;
    await accept(message(7, 2));
    await accept(message(7, 3));
    // p1 holds the conversation and hangs in its turn of message 2; p2 arrives.
    await until(() => p1.member.fence(turnLeaseName("telegram:7")) !== undefined, "p1 to hold the conversation");
    const p2 = await startProc("p2");
    // p1's renewals go on (it is only its turn that hangs), so p2 must not take the conversation yet.
    await new Promise((resolve) => setTimeout(resolve, TTL));
    expect((await runs()).length).toBe(1);
    expect(p2.member.fence(turnLeaseName("telegram:7"))).toBeUndefined();

    // Now p1's leases can no longer be renewed (its cluster connection is gone), though its turn
    // still holds a connection for writes: its lease runs out and p2 takes over.
    await p1.store.close();
    await until(() => p1.dropped.includes("telegram:7"), "p1 to drop the conversation", 2 * TTL);
    await until(async () => (await runs()).length === 3, "p2 to run the rest", 4 * TTL);
    // p1 wakes up and finishes its turn of message 2: the write is refused, nothing of it stored.
    p1.stall = false;
    await until(() => p1.fencedOut.includes("2"), "p1's stale write to be fenced out");
    const done = await runs();
    expect(done.map((r) => `${r.process}:${r.msg_id}`)).toEqual(["p1:1", "p2:2", "p2:3"]);
    expect(Number(done[1].epoch)).toBeGreaterThan(Number(done[0].epoch));
  }, 60_000);
});
