import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { type Database, openDatabase } from "../store/sqlite/database.js";
import { openSqliteStore } from "../store/sqlite/sqlite-store.js";
import { jobCommand, listJobsText } from "./cron-commands.js";

let dir: string;
let db: Database;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "pincer-cron-cli-"));
  db = openDatabase(join(dir, "pincer.db"));
});

afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

it("lists every conversation's jobs and removes one by id", async () => {
  const store = openSqliteStore(db).jobs;
  expect(await listJobsText(store)).toBe("No scheduled jobs.");
  const at = Date.parse("2025-06-01T07:00:00Z");
  const job = await store.add({
    name: "pizza",
    message: "take the pizza out",
    schedule: { kind: "at", at },
    tz: "Europe/Berlin",
    origin: { channel: "telegram", chatId: "123", sessionKey: "telegram:123", isGroup: false },
    owner: { channel: "telegram", userId: "42" },
    createdAt: at - 1000,
    nextRunAt: at,
  });
  const text = await listJobsText(store);
  expect(text).toContain(`${job.id} "pizza"  telegram:123`);
  expect(text).toContain("next run: Sun 2025-06-01 09:00 Europe/Berlin (UTC+02:00)");

  const jobs = { jobs: store };
  expect(await jobCommand(jobs, "remove", "nope")).toEqual({
    ok: false,
    text: "No job nope (pincer cron list shows the ids).",
  });
  expect((await jobCommand(jobs, "remove", job.id)).ok).toBe(true);
  expect(await listJobsText(store)).toBe("No scheduled jobs.");
});
