import { spawn } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { packageRoot } from "../src/paths.js";
import { hasPostgres, startPostgres, type TestPostgres } from "./helpers/postgres.js";
import { until } from "./helpers/until.js";

const havePostgres = hasPostgres();

async function query(url: string, sql: string, params: unknown[] = []): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  client.on("error", () => {});
  await client.connect();
  try {
    return await client.query(sql, params);
  } finally {
    await client.end();
  }
}

async function reachable(url: string): Promise<boolean> {
  try {
    await query(url, "SELECT 1");
    return true;
  } catch {
    return false;
  }
}

describe.skipIf(!havePostgres)("the test PostgreSQL helper", () => {
  let server: TestPostgres;
  beforeAll(async () => {
    server = await startPostgres();
  }, 90_000);
  afterAll(() => server?.stop());

  it("serves fresh databases on 127.0.0.1 that keep their data across a restart", async () => {
    expect(server.url).toMatch(/^postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres$/);
    const a = await server.newDatabase();
    const b = await server.newDatabase();
    expect(a).not.toBe(b);
    await query(a, "CREATE TABLE kept (v text)");
    await query(a, "INSERT INTO kept VALUES ($1)", ["日本語"]);
    expect((await query(b, "SELECT count(*)::int AS n FROM pg_tables WHERE tablename = 'kept'")).rows[0].n).toBe(0);

    await server.down();
    expect(await reachable(a)).toBe(false);
    await server.up();
    expect((await query(a, "SELECT v FROM kept")).rows).toEqual([{ v: "日本語" }]);
  });

  it("offers pg_trgm (memory search on PostgreSQL needs it)", async () => {
    const url = await server.newDatabase();
    await query(url, "CREATE EXTENSION IF NOT EXISTS pg_trgm");
    const { rows } = await query(url, "SELECT similarity('記憶の検索', '記憶') > 0 AS found");
    expect(rows[0].found).toBe(true);
  });

  it("stops with the test process even when that process is killed with SIGKILL", async () => {
    const script = `
      import { startPostgres } from ${JSON.stringify(join(packageRoot(), "test/helpers/postgres.ts"))};
      const s = await startPostgres();
      console.log(JSON.stringify({ url: s.url, dir: s.dir }));
      setInterval(() => {}, 1000);
    `;
    const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      cwd: packageRoot(),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (c: Buffer) => {
      out += c.toString();
    });
    child.stderr.on("data", (c: Buffer) => {
      out += c.toString();
    });
    const line = await until(
      () => out.match(/\{"url":.*\}/)?.[0],
      "the child's server",
      60_000,
      () => out,
    );
    const { url, dir } = JSON.parse(line) as { url: string; dir: string };
    expect(await reachable(url)).toBe(true);
    child.kill("SIGKILL");
    await until(async () => !(await reachable(url)), "the orphaned server to stop", 30_000);
    rmSync(dir, { recursive: true, force: true });
  }, 90_000);

  it("removes its folder when stopped for good", async () => {
    const other = await startPostgres();
    const url = other.url;
    expect(existsSync(join(other.dir, "data", "PG_VERSION"))).toBe(true);
    await other.stop();
    await other.stop();
    expect(await reachable(url)).toBe(false);
    expect(existsSync(other.dir)).toBe(false);
  }, 90_000);
});
