import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { inspectCluster } from "../src/cluster/inspect.js";
import { leaseTiming } from "../src/cluster/lease-policy.js";
import { ClusterMember } from "../src/cluster/member.js";
import { RoleKeeper } from "../src/cluster/roles.js";
import { packageRoot } from "../src/paths.js";
import { type Fence, FencedOutError } from "../src/store/cluster.js";
import { type ClusterStore, openClusterStore } from "../src/store/postgres/cluster-store.js";
import { createPool, pgSql } from "../src/store/postgres/db.js";
import type { Sql } from "../src/store/sql.js";
import { hasPostgres, startPostgres, type TestPostgres } from "./helpers/postgres.js";
import { until } from "./helpers/until.js";

const havePostgres = hasPostgres();
const TTL = 3000;
const timing = leaseTiming(TTL);
const quiet = { info: () => {}, warn: () => {}, error: () => {} };

type Holder = ChildProcess & { lines: string[] };
const children: Holder[] = [];

function spawnHolder(url: string, role: string, name: string): Holder {
  const script = join(packageRoot(), "test/helpers/lease-holder.ts");
  const child = spawn(process.execPath, ["--import", "tsx", script, url, role, String(TTL), name], {
    cwd: packageRoot(),
    stdio: ["ignore", "pipe", "pipe"],
  }) as Holder;
  child.lines = [];
  let partial = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    const text = partial + chunk.toString();
    const lines = text.split("\n");
    partial = lines.pop() ?? "";
    child.lines.push(...lines);
  });
  child.stderr?.on("data", (chunk: Buffer) => child.lines.push(`stderr: ${chunk.toString()}`));
  children.push(child);
  return child;
}

const said = (child: Holder, prefix: string) => child.lines.find((line) => line.startsWith(prefix));
const epochOf = (line: string) => Number(line.split(" ").pop());

async function sql(url: string, text: string, params: unknown[] = []): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(text, params);
  } finally {
    await client.end();
  }
}

/**
 * Waits until the process named `holder` has held `role` for `leases` whole leases from now, renewing it: the lease's
 * end moved that far, with the same holder all along. Any other holder meanwhile fails at once.
 */
async function heldThrough(url: string, role: string, holder: string, leases: number): Promise<void> {
  const lease = async () => {
    const query =
      "SELECT holder, (extract(epoch FROM expires_at) * 1000)::bigint AS ends FROM cluster_leases WHERE name = $1";
    const [row] = (await sql(url, query, [role])).rows as Array<{ holder: string; ends: string }>;
    if (!row?.holder.startsWith(`${holder}-`)) throw new Error(`${role} is held by ${row?.holder}, not ${holder}`);
    return Number(row.ends);
  };
  const from = await lease();
  await until(
    async () => (await lease()) >= from + leases * TTL,
    `${holder} to hold ${role} for ${leases} leases`,
    60_000,
  );
}

function member(store: ClusterStore, id: string): ClusterMember {
  return new ClusterMember({ store, process: { id, host: "test", pid: process.pid }, timing, log: quiet });
}

describe.skipIf(!havePostgres)("clustered mode's leases on a real PostgreSQL", () => {
  let server: TestPostgres;
  let url: string;
  const stores: ClusterStore[] = [];
  const open = async () => {
    const store = await openClusterStore(url, { queryTimeoutMs: 1000 });
    stores.push(store);
    return store;
  };
  const pools: pg.Pool[] = [];
  /** A fenced transaction as the engine makes one: on a pool whose every write checks the fence first. */
  const fenced = <T>(fence: Fence, work: (tx: Sql) => Promise<T>): Promise<T> => {
    const pool = createPool(url, () => {});
    pools.push(pool);
    return pgSql(pool, fence).transaction(work);
  };

  beforeAll(async () => {
    server = await startPostgres();
  }, 90_000);
  afterAll(() => server?.stop());

  afterEach(async () => {
    for (const child of children.splice(0)) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGCONT");
        child.kill("SIGKILL");
        await once(child, "exit");
      }
    }
    await Promise.all(stores.splice(0).map((s) => s.close().catch(() => {})));
    await Promise.all(pools.splice(0).map((p) => p.end().catch(() => {})));
  });

  const freshDatabase = async () => {
    url = await server.newDatabase();
    await (await open()).release("nobody"); // migrates
    await sql(url, "CREATE TABLE fenced_writes (id bigserial PRIMARY KEY, writer text, epoch bigint)");
  };

  it("gives a role to one process at a time and to another within the lease when its holder is killed", async () => {
    await freshDatabase();
    const a = spawnHolder(url, "channel:telegram", "a");
    const startA = await until(
      () => said(a, "a start"),
      "a to take the role",
      30_000,
      () => a.lines.join("\n"),
    );
    const b = spawnHolder(url, "channel:telegram", "b");
    await until(
      () => said(b, "b ready"),
      "b to start",
      30_000,
      () => b.lines.join("\n"),
    );
    // b keeps trying every round, but a renews: two whole leases pass with a still the holder.
    await heldThrough(url, "channel:telegram", "a", 2);
    expect(said(b, "b start")).toBeUndefined();

    a.kill("SIGKILL");
    const killedAt = Date.now();
    const startB = await until(
      () => said(b, "b start"),
      "b to take over",
      3 * TTL,
      () => b.lines.join("\n"),
    );
    // Taken once a's lease ran out: after at most the lease and a round, never before a's end.
    expect(Date.now() - killedAt).toBeLessThan(TTL + 2 * timing.renewEveryMs + 1500);
    expect(epochOf(startB)).toBeGreaterThan(epochOf(startA));
    const { rows } = await sql(url, "SELECT DISTINCT epoch FROM fenced_writes ORDER BY epoch");
    expect(rows.map((r) => Number(r.epoch)).every((e) => e === epochOf(startA) || e === epochOf(startB))).toBe(true);
  }, 90_000);

  it("fences out a holder paused past its lease: on SIGCONT it gives the role up and its writes are refused", async () => {
    await freshDatabase();
    const a = spawnHolder(url, "scheduler", "a");
    const startA = await until(
      () => said(a, "a start"),
      "a to take the role",
      30_000,
      () => a.lines.join("\n"),
    );
    const b = spawnHolder(url, "scheduler", "b");
    await until(() => said(b, "b ready"), "b to start", 30_000);
    await until(
      async () => (await sql(url, "SELECT count(*)::int AS n FROM fenced_writes")).rows[0].n > 3,
      "a's writes",
    );

    a.kill("SIGSTOP");
    // A deadline, not the claim: on a machine busy with other work b's queries (1 s timeout) may fail a while.
    const startB = await until(
      () => said(b, "b start"),
      "b to take over",
      30_000,
      () => b.lines.join("\n"),
    );
    const epochB = epochOf(startB);
    await until(
      async () =>
        (await sql(url, "SELECT count(*)::int AS n FROM fenced_writes WHERE epoch = $1", [epochB])).rows[0].n > 0,
      "b's first write",
    );
    const { rows: firstOfB } = await sql(url, "SELECT min(id) AS id FROM fenced_writes WHERE epoch = $1", [epochB]);

    a.kill("SIGCONT");
    // a's timers fire late: its writes under the old epoch are refused, and it stops the role.
    await until(
      () => said(a, `a fenced out ${epochOf(startA)}`),
      "a's stale write to be refused",
      10_000,
      () => a.lines.join("\n"),
    );
    await until(
      () => said(a, "a stop"),
      "a to give the role up",
      10_000,
      () => a.lines.join("\n"),
    );
    const { rows: late } = await sql(url, "SELECT count(*)::int AS n FROM fenced_writes WHERE epoch = $1 AND id > $2", [
      epochOf(startA),
      firstOfB[0].id,
    ]);
    expect(late[0].n).toBe(0);
    // a does not take the role back while b holds it.
    await heldThrough(url, "scheduler", "b", 1);
    expect(a.lines.filter((line) => line.startsWith("a start"))).toHaveLength(1);
  }, 90_000);

  it("never lets two members hold a role at once while they come and go, and epochs only grow", async () => {
    await freshDatabase();
    const held: Array<{ who: number; from: number; to?: number; epoch: number }> = [];
    const members: ClusterMember[] = [];
    const keepers: RoleKeeper[] = [];
    const join = async (who: number) => {
      const m = member(await open(), `m${who}-${Date.now()}`);
      const keeper = new RoleKeeper({ member: m, log: quiet });
      keeper.add({
        name: "outbox:discord",
        start: async (fence) => {
          held.push({ who, from: performance.now(), epoch: fence.epoch });
        },
        stop: async () => {
          const open = held.findLast((h) => h.who === who && h.to === undefined);
          if (open) open.to = performance.now();
        },
      });
      m.start();
      members[who] = m;
      keepers[who] = keeper;
    };
    await Promise.all([0, 1, 2].map(join));
    let seen = 0;
    for (let round = 0; round < 4; round++) {
      await until(
        () => held.length > seen && held.at(-1)?.to === undefined && held.at(-1),
        "a holder",
        3 * TTL,
        () => JSON.stringify(held),
      );
      seen = held.length;
      const holder = held.at(-1)?.who as number;
      // An orderly stop gives the role back at once: the next holder need not wait for the lease.
      await keepers[holder].stop();
      await members[holder].stop();
      await join(holder);
    }
    await until(() => held.at(-1)?.to === undefined && held.length >= 5, "a last holder", 3 * TTL);
    for (let i = 1; i < held.length; i++) {
      expect(held[i].epoch).toBeGreaterThan(held[i - 1].epoch);
      expect(held[i - 1].to).toBeDefined();
      expect(held[i].from).toBeGreaterThanOrEqual(held[i - 1].to as number);
    }
    await Promise.all(keepers.map((k) => k.stop()));
    await Promise.all(members.map((m) => m.stop()));
  }, 90_000);

  it("refuses a fenced transaction under an old epoch and writes nothing of it", async () => {
    await freshDatabase();
    const store = await open();
    const first = await store.claim("p1", ["turn:telegram:42"], TTL);
    const epoch1 = first.get("turn:telegram:42") as number;
    await fenced({ name: "turn:telegram:42", epoch: epoch1 }, (tx) =>
      tx.run("INSERT INTO fenced_writes (writer, epoch) VALUES ('p1', $1)", [epoch1]),
    );
    // p2 cannot take a live lease; after p1 gives it back it can, under a new epoch.
    expect((await store.claim("p2", ["turn:telegram:42"], TTL)).size).toBe(0);
    await store.release("p1", ["turn:telegram:42"]);
    const epoch2 = (await store.claim("p2", ["turn:telegram:42"], TTL)).get("turn:telegram:42") as number;
    expect(epoch2).toBeGreaterThan(epoch1);

    const stale = fenced({ name: "turn:telegram:42", epoch: epoch1 }, async (tx) => {
      await tx.run("INSERT INTO fenced_writes (writer, epoch) VALUES ('p1', $1)", [epoch1]);
    });
    await expect(stale).rejects.toBeInstanceOf(FencedOutError);
    // The same holder renewing keeps its epoch.
    expect((await store.claim("p2", ["turn:telegram:42"], TTL)).get("turn:telegram:42")).toBe(epoch2);
    const { rows } = await sql(url, "SELECT writer, epoch FROM fenced_writes");
    expect(rows).toEqual([{ writer: "p1", epoch: String(epoch1) }]);
  });

  it("fences an engine's pool: its queries and its own transactions write only under the current epoch", async () => {
    await freshDatabase();
    const store = await open();
    const pool = new pg.Pool({ connectionString: url });
    pool.on("error", () => {});
    try {
      const name = "turn:telegram:5";
      const epoch1 = (await store.claim("p1", [name], TTL)).get(name) as number;
      const fenced = pgSql(pool, { name, epoch: epoch1 });
      await fenced.run("INSERT INTO fenced_writes (writer, epoch) VALUES ('single', $1)", [epoch1]);
      await fenced.transaction((tx) => tx.run("INSERT INTO fenced_writes (writer, epoch) VALUES ('tx', $1)", [epoch1]));

      await store.release("p1", [name]);
      await store.claim("p2", [name], TTL);
      await expect(
        fenced.run("INSERT INTO fenced_writes (writer, epoch) VALUES ('stale single', $1)", [epoch1]),
      ).rejects.toBeInstanceOf(FencedOutError);
      await expect(
        fenced.transaction((tx) =>
          tx.run("INSERT INTO fenced_writes (writer, epoch) VALUES ('stale tx', $1)", [epoch1]),
        ),
      ).rejects.toBeInstanceOf(FencedOutError);
      const { rows } = await sql(url, "SELECT writer FROM fenced_writes ORDER BY id");
      expect(rows).toEqual([{ writer: "single" }, { writer: "tx" }]);
    } finally {
      await pool.end();
    }
  });

  it("holds a takeover back until a fenced transaction under way has committed", async () => {
    await freshDatabase();
    const store = await open();
    const other = await open();
    const name = "turn:discord:7";
    // A lease that has just run out: free to take, yet its holder is still inside a transaction.
    const epoch1 = (await store.claim("p1", [name], 1)).get(name) as number;
    await new Promise((resolve) => setTimeout(resolve, 20));
    let takenAt = 0;
    let committedAt = 0;
    await fenced({ name, epoch: epoch1 }, async (tx) => {
      const takeover = other.claim("p2", [name], TTL).then((held) => {
        takenAt = performance.now();
        return held;
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      await tx.run("INSERT INTO fenced_writes (writer, epoch) VALUES ('p1', $1)", [epoch1]);
      committedAt = performance.now();
      void takeover;
    });
    await until(() => takenAt > 0, "the takeover");
    expect(takenAt).toBeGreaterThanOrEqual(committedAt);
    const { rows } = await sql(url, "SELECT holder FROM cluster_leases WHERE name = $1", [name]);
    expect(rows).toEqual([{ holder: "p2" }]);
  });

  it("does not let a holder that stopped inside a fenced transaction (paused) hold the takeover back", async () => {
    await freshDatabase();
    const store = await open();
    const other = await open();
    const name = "turn:telegram:9";
    const epoch1 = (await store.claim("p1", [name], 1)).get(name) as number;
    await new Promise((resolve) => setTimeout(resolve, 20));
    // The lease row is locked for share, and then the holder does nothing more: as when SIGSTOP lands there.
    let resume = () => {};
    const stuck = fenced({ name, epoch: epoch1 }, () => new Promise<void>((resolve) => (resume = resolve)));
    stuck.catch(() => {});
    await new Promise((resolve) => setTimeout(resolve, 200));
    let held: Map<string, number> | undefined;
    // The server ends the idle transaction after IDLE_IN_TRANSACTION_MS (5 s); claims that time out before retry.
    await until(
      async () => {
        held = await other.claim("p2", [name], TTL).catch(() => undefined);
        return held?.has(name);
      },
      "the takeover",
      30_000,
    );
    expect(held?.get(name)).toBeGreaterThan(epoch1);
    // When the holder wakes, its transaction is gone: nothing of it commits, and nothing crashes.
    resume();
    await expect(stuck).rejects.toThrow();
  }, 60_000);

  it("shows each process's heartbeat and who holds what, and forgets a process that leaves", async () => {
    await freshDatabase();
    const store = await open();
    const m = member(store, "viewer-1");
    let gained = false;
    m.want("scheduler", { gained: () => (gained = true), lost: () => {} });
    m.start();
    await until(() => gained, "the role");
    const view = await store.view();
    expect(view.processes).toEqual([
      expect.objectContaining({ id: "viewer-1", host: "test", pid: process.pid, heartbeatAgeMs: expect.any(Number) }),
    ]);
    expect(view.processes[0].heartbeatAgeMs).toBeLessThan(TTL);
    expect(view.leases).toEqual([expect.objectContaining({ name: "scheduler", holder: "viewer-1" })]);
    expect(view.leases[0].expiresInMs).toBeGreaterThan(0);
    const report = await inspectCluster(url, ["telegram"]);
    expect(report.lines[0]).toBe("cluster:       1 process");
    expect(report.lines.join("\n")).toMatch(/scheduler +test:\d+ \(epoch \d+, renewed within/);
    expect(report).toMatchObject({ ok: false, detail: expect.stringContaining("held by nobody: channel:telegram") });
    await m.stop();
    expect(await store.view()).toEqual({ processes: [], leases: [] });
  });

  it("says in one line when the cluster's database cannot be read", async () => {
    const report = await inspectCluster(`postgres://postgres@127.0.0.1:${server.port}/no_such_database`, []);
    expect(report.ok).toBe(false);
    expect(report.lines).toEqual([
      expect.stringMatching(/^cluster: +cannot read the cluster from PINCER_DATABASE_URL: .*no_such_database/),
    ]);
  });

  it("gives a role up when PostgreSQL goes away, and a member takes it again once it is back", async () => {
    await freshDatabase();
    const m = member(await open(), "survivor");
    const events: string[] = [];
    m.want("channel:discord", { gained: (f) => events.push(`gained ${f.epoch}`), lost: () => events.push("lost") });
    m.start();
    await until(() => events.length === 1, "the role");
    await server.down();
    const downAt = performance.now();
    await until(() => events.includes("lost"), "the role to be given up", 3 * TTL);
    expect(performance.now() - downAt).toBeLessThan(TTL);
    expect(m.fence("channel:discord")).toBeUndefined();
    await server.up();
    await until(() => events.length === 3, "the role to be taken again", 6 * TTL);
    expect(events[2]).toMatch(/^gained \d+$/);
    expect(m.fence("channel:discord")).toBeDefined();
    await m.stop();
  }, 90_000);
});
