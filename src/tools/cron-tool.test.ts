import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Switchboard } from "../bus/switchboard.js";
import type { InboundMessage, PersonMessage } from "../bus/types.js";
import type { Config } from "../config/config.js";
import { runMessage } from "../scheduler/run-message.js";
import { type Database, openDatabase } from "../store/sqlite/database.js";
import { openSqliteStore } from "../store/sqlite/sqlite-store.js";
import type { Store } from "../store/store.js";
import { createCronTool } from "./cron-tool.js";
import { ToolRegistry } from "./registry.js";
import type { ToolContext } from "./tool.js";

const NOW = Date.parse("2025-03-01T10:00:00Z"); // 11:00 in Berlin
let dir: string;
let db: Database;
let store: Store["jobs"];
let registry: ToolRegistry;
let wakes: number;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "pincer-cron-tool-"));
  db = openDatabase(join(dir, "pincer.db"));
  const stores = openSqliteStore(db);
  store = stores.jobs;
  wakes = 0;
  vi.useFakeTimers({ toFake: ["Date"], now: NOW });
  const config = { timezone: "Europe/Berlin", cron: { minEverySeconds: 60, maxJobsPerOwner: 3 } } as Config;
  registry = new ToolRegistry().register(createCronTool({ store: stores, config, scheduler: { wake: () => wakes++ } }));
});

afterEach(() => {
  vi.useRealTimers();
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

function inbound(sessionKey: string, extra: Partial<PersonMessage> = {}): InboundMessage {
  const [channel, chatId] = sessionKey.split(":");
  return {
    id: "1",
    channel: channel as PersonMessage["channel"],
    chatId,
    senderId: "42",
    senderName: "Ada",
    text: "remind me",
    media: [],
    isGroup: false,
    mentionsBot: false,
    receivedAt: NOW,
    sessionKey,
    ...extra,
  };
}

function ctx(sessionKey = "telegram:123", msg = inbound(sessionKey)): ToolContext {
  return {
    sessionKey,
    inbound: msg,
    workspace: dir,
    seesOwnerMemory: true,
    signal: new AbortController().signal,
    bus: new Switchboard({ journal: openSqliteStore(db).journal }),
    log: pino({ level: "silent" }),
  };
}

const cron = (args: Record<string, unknown>, context = ctx()) =>
  registry.execute("cron", JSON.stringify(args), context);

describe("cron tool: add", () => {
  it("reads `at` without offset in the configured zone and answers with id and absolute next run", async () => {
    const out = await cron({ action: "add", message: "take the pizza out", at: "2025-03-01T11:20", name: "pizza" });
    const [job] = await store.listBySession("telegram:123");
    expect(job.nextRunAt).toBe(Date.parse("2025-03-01T10:20:00Z"));
    expect(out).toContain(`Scheduled job ${job.id} "pizza"`);
    expect(out).toContain("Next run: Sat 2025-03-01 11:20 Europe/Berlin (UTC+01:00) (in 20 min)");
    expect(wakes).toBe(1);
  });

  it("reads a cron expression in `tz` and shows the next run in that zone", async () => {
    const out = await cron({ action: "add", message: "weather", cron_expr: "30 8 * * 1-5", tz: "America/New_York" });
    // Saturday 2025-03-01: the next weekday is Monday 03-03, 08:30 EST = 13:30 UTC.
    expect(out).toContain("Next run: Mon 2025-03-03 08:30 America/New_York (UTC-05:00)");
    expect((await store.listBySession("telegram:123"))[0].nextRunAt).toBe(Date.parse("2025-03-03T13:30:00Z"));
  });

  it("stores the origin conversation, thread included", async () => {
    const key = "telegram:-100500:thread:7";
    await cron({ action: "add", message: "stand-up", every_seconds: 3600 }, ctx(key, inbound(key, { isGroup: true })));
    const [job] = await store.listBySession(key);
    expect(job.origin).toEqual({
      channel: "telegram",
      chatId: "-100500",
      threadId: "7",
      sessionKey: key,
      isGroup: true,
    });
    expect(job.nextRunAt).toBe(NOW + 3600_000);
  });

  it.each([
    [{ action: "add", at: "2025-03-01T12:00" }, /needs `message`/],
    [{ action: "add", message: "x" }, /exactly one of `at`/],
    [{ action: "add", message: "x", at: "2025-03-01T12:00", every_seconds: 600 }, /got at and every_seconds/],
    [{ action: "add", message: "x", every_seconds: 30 }, /every 30 s; the shortest period allowed is 1 min/],
    [{ action: "add", message: "x", cron_expr: "* * * * * *" }, /fires every 1 s/],
    [{ action: "add", message: "x", cron_expr: "* * * *" }, /has 4 fields; use 5/],
    [{ action: "add", message: "x", cron_expr: "0 25 * * *" }, /not valid: Invalid value for hour/],
    [{ action: "add", message: "x", at: "2025-03-01T11:00", tz: "Mars/Olympus" }, /not an IANA time zone/],
    [{ action: "add", message: "x", at: "tomorrow 9am" }, /not an ISO 8601 date-time/],
    [{ action: "add", message: "x", at: "2025-03-01T10:59" }, /in the past; it is now Sat 2025-03-01 11:00/],
    [{ action: "add", message: "x", at: "2025-03-01T12:00", whatever: 1 }, /unexpected property "whatever"/],
    [{ action: "remove" }, /needs `job_id`/],
    [{ action: "snooze" }, /action must be equal to one of the allowed values/],
  ])("rejects %j with a clear error", async (args, error) => {
    const out = await cron(args);
    expect(out).toMatch(/^Error: /);
    expect(out).toMatch(error);
    expect(await store.listAll()).toEqual([]);
  });

  it("refuses to create jobs from inside a scheduled run", async () => {
    const job = await store.add({
      message: "check the oven",
      schedule: { kind: "every", everySeconds: 600, anchor: NOW },
      tz: "UTC",
      origin: { channel: "telegram", chatId: "123", sessionKey: "telegram:123", isGroup: false },
      owner: { channel: "telegram", userId: "42" },
      createdAt: NOW,
      nextRunAt: NOW,
    });
    const run = runMessage(job, NOW, NOW);
    const out = await cron({ action: "add", message: "again", every_seconds: 600 }, ctx("telegram:123", run));
    expect(out).toMatch(/^Error: this turn is a scheduled run/);
    expect(await store.listAll()).toHaveLength(1);
  });

  it("caps the jobs of one person over all their chats (cron.maxJobsPerOwner), not those of another", async () => {
    for (let i = 0; i < 3; i++)
      expect(await cron({ action: "add", message: `m${i}`, every_seconds: 600 })).toMatch(/^Scheduled/);
    const elsewhere = ctx("telegram:-100", inbound("telegram:-100", { isGroup: true }));
    expect(await cron({ action: "add", message: "one too many", every_seconds: 600 }, elsewhere)).toBe(
      "Error: this person already has 3 jobs, the most one person may have (config cron.maxJobsPerOwner); remove one first.",
    );
    const other = ctx("telegram:-100", inbound("telegram:-100", { isGroup: true, senderId: "7" }));
    expect(await cron({ action: "add", message: "theirs", every_seconds: 600 }, other)).toMatch(/^Scheduled/);
  });
});

describe("cron tool: list and remove", () => {
  it("lists only the current conversation's jobs", async () => {
    await cron({ action: "add", message: "pizza", at: "2025-03-01T11:20" });
    await cron({ action: "add", message: "other chat", every_seconds: 600 }, ctx("discord:9"));
    const out = await cron({ action: "list" });
    expect(out).toContain("pizza");
    expect(out).not.toContain("other chat");
    expect(await cron({ action: "list" }, ctx("telegram:555"))).toBe("No scheduled jobs in this conversation.");
  });

  it("removes a job of this conversation but not of another", async () => {
    await cron({ action: "add", message: "pizza", at: "2025-03-01T11:20" });
    const [job] = await store.listBySession("telegram:123");
    expect(await cron({ action: "remove", job_id: job.id }, ctx("telegram:555"))).toMatch(
      /^Error: no job .* It has no jobs/,
    );
    expect(await store.get(job.id)).toBeDefined();
    expect(await cron({ action: "remove", job_id: job.id })).toMatch(/^Removed job/);
    expect(await store.get(job.id)).toBeUndefined();
    expect(await cron({ action: "remove", job_id: job.id })).toMatch(/^Error: no job/);
  });
});
