import { writeFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, beforeEach } from "vitest";
import type { Daemon, GatewayOnFakes } from "./daemon.js";
import { startPostgres, type TestPostgres } from "./postgres.js";

export interface ClusterOnPostgres {
  /** The file's PostgreSQL server (down/up/pause/resume for outages). */
  readonly server: TestPostgres;
  /** This test's database. */
  readonly url: string;
  /** This test's PINCER_HOME, shared by every process as a real cluster shares its storage. */
  readonly home: string;
  /** Starts `pincer gateway` on the shared home and database, with `env` on top. */
  gateway(env?: Record<string, string>): Daemon;
  query<R extends pg.QueryResultRow>(text: string, params?: unknown[]): Promise<R[]>;
  /** The daemon holding a lease (a LIKE pattern) now, by the process id in its holder name. */
  holderOf(lease: string, daemons: Daemon[]): Promise<Daemon | undefined>;
  /** Waits until every daemon joined the cluster and each role is held. */
  allUp(daemons: Daemon[], roles?: string[]): Promise<void>;
  /**
   * Waits until the cluster is at rest: no inbound message pending, no reply pending, no conversation's turn lease held.
   * Past this point nothing is left that could be answered or sent again, so a count taken now is final (a duplicate
   * would have to be a second turn or a second send, and neither has anything left to start from).
   */
  settled(what?: string, ms?: number): Promise<void>;
}

/**
 * Built `pincer gateway` processes on one real PostgreSQL: call inside `describe.skipIf(!hasPostgres())`. The server
 * starts once for the file; each test gets a new database and a new PINCER_HOME whose config.json holds
 * `cluster.leaseSeconds` (and `config`).
 */
export function clusterOnPostgres(
  fakes: GatewayOnFakes,
  options: { prefix: string; leaseSeconds: number; config?: object; url?: (url: string) => string },
): ClusterOnPostgres {
  let server: TestPostgres | undefined;
  let url = "";
  let home = "";
  beforeAll(async () => {
    server = await startPostgres();
  }, 90_000);
  afterAll(() => server?.stop());
  beforeEach(async () => {
    const fresh = await (server as TestPostgres).newDatabase();
    url = options.url ? options.url(fresh) : fresh;
    home = fakes.home(options.prefix);
    const config = { ...options.config, cluster: { leaseSeconds: options.leaseSeconds } };
    writeFileSync(join(home, "config.json"), JSON.stringify(config));
  });

  async function query<R extends pg.QueryResultRow>(text: string, params: unknown[] = []): Promise<R[]> {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return (await client.query<R>(text, params)).rows;
    } finally {
      await client.end();
    }
  }
  const count = async (text: string) => (await query<{ n: number }>(text).catch(() => []))[0]?.n;

  const cluster: ClusterOnPostgres = {
    get server() {
      if (!server) throw new Error("the PostgreSQL server starts in the file's beforeAll");
      return server;
    },
    get url() {
      return url;
    },
    get home() {
      return home;
    },
    gateway: (env = {}) => fakes.gateway(home, { PINCER_DATABASE_URL: url, ...env }),
    query,
    async holderOf(lease, daemons) {
      const rows = await query<{ holder: string }>(
        "SELECT holder FROM cluster_leases WHERE name LIKE $1 AND expires_at > now()",
        [lease],
      ).catch(() => []);
      const pid = rows[0]?.holder.split(":").at(-2);
      return daemons.find((d) => String(d.pid) === pid);
    },
    async allUp(daemons, roles = ["channel:telegram", "scheduler"]) {
      await fakes.until(
        async () =>
          // Before the first process created the tables, there is nothing to count yet.
          (await count("SELECT count(*)::int AS n FROM cluster_processes")) === daemons.length &&
          (await Promise.all(roles.map((role) => cluster.holderOf(role, daemons)))).every(Boolean),
        `every gateway to join and ${roles.join(", ")} to be held`,
        60_000,
      );
    },
    async settled(what = "the cluster to be at rest", ms = 60_000) {
      await fakes.until(
        async () =>
          (await count(
            `SELECT ((SELECT count(*) FROM inbox WHERE status = 'pending')
                   + (SELECT count(*) FROM outbox WHERE status = 'pending')
                   + (SELECT count(*) FROM cluster_leases WHERE name LIKE 'turn:%' AND expires_at > now()))::int AS n`,
          )) === 0,
        what,
        ms,
      );
    },
  };
  return cluster;
}

/** How many of a daemon's JSON log lines have a "msg" that starts with `msg`. */
export function logged(daemon: Daemon, msg: string): number {
  return daemon.output.join("").split(`"msg":"${msg}`).length - 1;
}
