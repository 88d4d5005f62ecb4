import { join } from "node:path";
import { expect, it } from "vitest";
import { nextRun } from "../src/scheduler/schedule.js";
import { openSqliteStore } from "../src/store/sqlite/sqlite-store.js";
import { tempHome } from "./helpers/app.js";
import { pincer } from "./helpers/daemon.js";

/** `pincer cron list|show|pause|resume|run|remove` as built, on a home with one job. */
it("lists and shows jobs (also as JSON), pauses, resumes, asks for a run and removes, by id", async () => {
  const home = tempHome("pincer-cron-cli-");
  const env = { PINCER_TIMEZONE: "UTC" };
  const store = await openSqliteStore(join(home, "pincer.db"));
  const now = Date.now();
  const schedule = { kind: "cron", expr: "30 8 * * 1-5", tz: "Europe/Berlin" } as const;
  const job = await store.jobs.add({
    name: "legs",
    message: "stretch your legs",
    schedule,
    tz: "Europe/Berlin",
    origin: { channel: "telegram", chatId: "42", sessionKey: "telegram:42", isGroup: false },
    owner: { channel: "telegram", userId: "42" },
    createdAt: now,
    nextRunAt: nextRun(schedule, new Date(now))?.getTime() ?? 0,
    limits: { maxRuns: 10 },
  });
  await store.close();

  const list = await pincer(["cron", "list"], home, env);
  expect(list.stdout).toContain(`${job.id} "legs"  telegram:42`);
  expect(list.stdout).toContain("At 08:30, Monday through Friday (Europe/Berlin)");
  const listed = JSON.parse((await pincer(["cron", "list", "--json"], home, env)).stdout);
  expect(listed).toMatchObject([{ id: job.id, message: "stretch your legs", limits: { maxRuns: 10 } }]);

  const show = await pincer(["cron", "show", job.id], home, env);
  expect(show.code).toBe(0);
  expect(show.stdout).toContain("runs so far: 0; failures in a row: 0; stop rules: maxRuns 10");
  expect(show.stdout).toContain("no runs yet");
  expect(show.stdout.match(/^ {4}\w{3} \d{4}-\d{2}-\d{2} 08:30 Europe\/Berlin/gm)).toHaveLength(5);
  const shown = JSON.parse((await pincer(["cron", "show", job.id, "--json"], home, env)).stdout);
  expect(shown).toMatchObject({ id: job.id, runs: [] });
  expect(shown.upcoming).toHaveLength(5);

  expect((await pincer(["cron", "pause", job.id], home, env)).stdout).toContain(`Paused job "legs" (${job.id})`);
  const again = await pincer(["cron", "pause", job.id], home, env);
  expect([again.code, again.stdout.trim()]).toEqual([1, `job "legs" (${job.id}) is paused already.`]);
  expect((await pincer(["cron", "list"], home, env)).stdout).toContain("(someone paused it)");
  expect((await pincer(["cron", "resume", job.id], home, env)).stdout).toMatch(/Resumed job .* Next run: \w{3} /);
  expect((await pincer(["cron", "run", job.id], home, env)).stdout).toContain("runs now");
  const asked = JSON.parse((await pincer(["cron", "show", job.id, "--json"], home, env)).stdout);
  expect(asked.runRequestedAt).toBeGreaterThan(0);

  for (const action of ["show", "pause", "resume", "run", "remove"]) {
    const missing = await pincer(["cron", action, "nope"], home, env);
    const said = "No job nope (pincer cron list shows the ids).";
    expect([action, missing.code, missing.stdout.trim()]).toEqual([action, 1, said]);
  }
  expect((await pincer(["cron", "show", "nope", "--json"], home, env)).stdout.trim()).toBe("null");
  expect((await pincer(["cron", "remove", job.id], home, env)).stdout).toContain(`Deleted job "legs"`);
  expect((await pincer(["cron", "list"], home, env)).stdout.trim()).toBe("No scheduled jobs.");
}, 120_000);
