/**
 * A run whose turn ended in a process that died before the run's own end was recorded: built `pincer gateway`
 * processes of a two-process cluster on a real PostgreSQL, the fake Bot API and the fake model. The test holds the
 * run's row locked, so the process running it commits the turn (its reply in the outbox, its message done) and then
 * waits on that row; it is killed with SIGKILL right there. The survivor closes the run as `interrupted`, while a run
 * of a live process (its message still waiting on the model) is left alone however often it looks. On one process
 * (SQLite), the start does the same.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { databasePath } from "../src/paths.js";
import { openDatabase } from "../src/store/sqlite/database.js";
import type { FakeReply } from "./fakes/openai-server.js";
import { tempHome } from "./helpers/app.js";
import { atRest, gatewayOnFakes, killHard } from "./helpers/daemon.js";
import { hasPostgres, startPostgres, type TestPostgres } from "./helpers/postgres.js";

const havePostgres = hasPostgres();
const SCHEDULER_PREFIX = "[system: scheduler]";
const LEASE_SECONDS = 3;
const fakes = gatewayOnFakes();
const { model, say } = fakes;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The model: a user's request becomes a reminder 2 s ahead; a run is answered by `onRun`. */
function reminderModel(onRun: () => Promise<FakeReply>) {
  model.respond(async (request): Promise<FakeReply> => {
    const last = request.messages.at(-1);
    const text = typeof last?.content === "string" ? last.content : "";
    if (last?.role === "tool") return { content: `Set: ${text.split("\n")[0]}` };
    if (text.startsWith(SCHEDULER_PREFIX)) return onRun();
    const at = new Date(Date.now() + 2000).toISOString();
    return { toolCalls: [{ name: "cron", arguments: { action: "add", message: "take the pizza out", at } }] };
  });
}

const reminders = () => fakes.telegram.sent.filter((m) => m.text.startsWith("PIZZA TIME"));

describe("a run cut off on one process (SQLite)", () => {
  it("is resumed after a kill mid-turn, left running; one whose turn was over is closed as interrupted at the start", async () => {
    const home = fakes.home("pincer-jobs-crash-");
    let runs = 0;
    reminderModel(async () => {
      runs++;
      // The first two runs are cut off by a kill while the model thinks.
      return runs <= 2 ? { content: "PIZZA TIME (never sent)", delayMs: 60_000 } : { content: "PIZZA TIME" };
    });
    const rows = (sql: string) => {
      const db = openDatabase(databasePath(home));
      try {
        return db.prepare(sql).all() as Array<Record<string, unknown>>;
      } finally {
        db.close();
      }
    };
    let first = fakes.gateway(home);
    say("remind me in 2 seconds to take the pizza out");
    await fakes.until(() => runs === 1, "the run on the model", 30_000);
    await killHard(first);
    // Its message still waits in the inbox: the restart runs it again, so the start leaves the run open.
    first = fakes.gateway(home);
    await fakes.until(() => runs === 2, "the run resumed", 30_000);
    expect(rows("SELECT outcome FROM job_runs")).toEqual([{ outcome: "running" }]);
    await killHard(first);
    // As if the turn had been committed just before the kill (the reply recorded, the message done) and only the
    // run's end was lost: the start closes the run, and nothing runs it again.
    const db = openDatabase(databasePath(home));
    db.prepare("UPDATE inbox SET status = 'done' WHERE id LIKE '%:cron:%'").run();
    db.close();
    fakes.gateway(home);
    const [closed] = (await fakes.until(() => {
      const found = rows("SELECT * FROM job_runs WHERE outcome = 'interrupted'");
      return found.length > 0 && found;
    }, "the run closed at the start")) as Array<Record<string, unknown>>;
    expect(closed).toMatchObject({ message: "take the pizza out", prompt_tokens: 0 });
    // Nothing pending and no job due: nothing is left that could run it again.
    await fakes.until(() => atRest(home), "nothing left to run or send");
    expect(runs).toBe(2);
    expect(reminders()).toEqual([]);
  }, 120_000);
});

describe.skipIf(!havePostgres)("a run cut off between its turn and its end", () => {
  let server: TestPostgres;

  beforeAll(async () => {
    server = await startPostgres();
  }, 90_000);
  afterAll(() => server?.stop());

  it("is closed as interrupted by the process that survives; a live process's run is left to finish", async () => {
    const url = await server.newDatabase();
    const home = tempHome("pincer-jobs-crash-");
    writeFileSync(join(home, "config.json"), JSON.stringify({ cluster: { leaseSeconds: LEASE_SECONDS } }));
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let runs = 0;
    reminderModel(async () => {
      runs++;
      await held;
      return { content: "PIZZA TIME: take the pizza out" };
    });
    const daemons = [0, 1].map(() => fakes.gateway(home, { PINCER_DATABASE_URL: url }));
    const db = new pg.Client({ connectionString: url });
    await db.connect();
    const query = async <R extends pg.QueryResultRow>(text: string, params: unknown[] = []) =>
      (await db.query<R>(text, params).catch(() => ({ rows: [] as R[] }))).rows;
    const found = async <R extends pg.QueryResultRow>(text: string) => {
      const rows = await query<R>(text);
      return rows.length > 0 ? rows : undefined;
    };
    try {
      say("remind me in 2 seconds to take the pizza out");
      await fakes.until(() => fakes.telegram.sent.find((m) => m.text.startsWith("Set:")), "the confirmation", 60_000);
      const [run] = (await fakes.until(
        async () => runs > 0 && (await found<{ id: string }>("SELECT id FROM job_runs WHERE outcome = 'running'")),
        "the run waiting on the model",
        30_000,
      )) as Array<{ id: string }>;
      // The run of a live process is not touched, though the survivor-to-be sweeps every half lease meanwhile. The
      // sweeps leave no trace to wait on: time passing is the input here.
      await sleep(LEASE_SECONDS * 1000 * 2);
      expect(await query("SELECT outcome FROM job_runs")).toEqual([{ outcome: "running" }]);

      const [{ holder }] = await query<{ holder: string }>("SELECT holder FROM cluster_leases WHERE name = $1", [
        "turn:telegram:42",
      ]);
      const runner = daemons.find((d) => holder.split(":").at(-2) === String(d.pid));
      expect(runner).toBeDefined();
      const lock = new pg.Client({ connectionString: url });
      await lock.connect();
      await lock.query("BEGIN");
      await lock.query("SELECT 1 FROM job_runs WHERE id = $1 FOR UPDATE", [run.id]);
      release();
      // The turn is committed (its message done); the run's end waits on the locked row.
      await fakes.until(
        async () =>
          (await query("SELECT 1 FROM inbox WHERE id LIKE $1 AND status = 'done'", [`%:${run.id}`])).length === 1,
        "the turn committed",
        30_000,
      );
      await killHard(runner as (typeof daemons)[number]);
      await lock.query("ROLLBACK");
      await lock.end();

      const [closed] = (await fakes.until(
        () => found<Record<string, unknown>>("SELECT * FROM job_runs WHERE outcome = 'interrupted'"),
        "the run closed by the survivor",
        60_000,
      )) as Array<Record<string, unknown>>;
      expect(closed).toMatchObject({ id: run.id, message: "take the pizza out" });
      expect(closed.reason).toBe(
        "the run's end was not recorded: the process running it stopped (or /stop or /new set the run aside)",
      );
      expect(Number(closed.finished_at)).toBeGreaterThan(0);
      // Its reply was committed with the turn: it is delivered once (by whichever process holds the channel), and the
      // run is not run again.
      await fakes.until(() => fakes.telegram.sent.find((m) => m.text.startsWith("PIZZA TIME")), "the reminder", 60_000);
      // Nothing pending, no turn held and no job left: nothing could deliver it or run it again.
      const left = `SELECT ((SELECT count(*) FROM inbox WHERE status = 'pending') + (SELECT count(*) FROM outbox WHERE status = 'pending')
        + (SELECT count(*) FROM cluster_leases WHERE name LIKE 'turn:%' AND expires_at > now())
        + (SELECT count(*) FROM cron_jobs))::int AS n`;
      await fakes.until(
        async () => (await query<{ n: number }>(left))[0]?.n === 0,
        "nothing left to run or send",
        60_000,
      );
      expect(reminders()).toHaveLength(1);
      expect(runs).toBe(1);
      expect(await query("SELECT outcome FROM job_runs")).toEqual([{ outcome: "interrupted" }]);
    } finally {
      release();
      await db.end();
    }
  }, 180_000);
});
