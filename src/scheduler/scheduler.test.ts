import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../test/fakes/manual-clock.js";
import { Switchboard } from "../bus/switchboard.js";
import type { InboundMessage } from "../bus/types.js";
import { ownedJobs } from "../store/jobs.js";
import { type Database, openDatabase } from "../store/sqlite/database.js";
import { sqliteSql } from "../store/sqlite/sql.js";
import { openSqliteStore } from "../store/sqlite/sqlite-store.js";
import type { JobOrigin, Schedule, Store } from "../store/store.js";
import { nextRun } from "./schedule.js";
import { Scheduler } from "./scheduler.js";

const log = pino({ level: "silent" });
const MIN = 60_000;
const origin: JobOrigin = {
  channel: "telegram",
  chatId: "123",
  threadId: "7",
  sessionKey: "telegram:123:thread:7",
  isGroup: true,
};

/** One pincer process's worth of scheduler state over a database file that outlives it. */
class Process {
  readonly db: Database;
  readonly journal: Store["journal"];
  readonly bus: Switchboard;
  readonly store: Store["jobs"];
  readonly scheduler: Scheduler;

  constructor(path: string) {
    this.db = openDatabase(path);
    const store = openSqliteStore(this.db);
    this.journal = store.journal;
    this.bus = new Switchboard({ journal: this.journal });
    this.store = store.jobs;
    this.scheduler = new Scheduler({
      store: this.store,
      bus: this.bus,
      inbox: this.journal,
      log,
      ownerHasAccess: async (owner) => !revoked.has(`${owner.channel}:${owner.userId}`),
    });
  }

  /** Everything published to the bus since the last call (what the agent worker would run). */
  async drain(): Promise<InboundMessage[]> {
    const out: InboundMessage[] = [];
    while (this.bus.inbound.size > 0) {
      const msg = await this.bus.inbound.next();
      if (msg) out.push(msg);
    }
    return out;
  }

  /** What the agent worker does once a run's turn is over. */
  finish(msg: InboundMessage): Promise<void> {
    return this.journal.completeInbound(msg);
  }

  close(): void {
    this.scheduler.stop();
    this.db.close();
  }
}

/** Owners whose access the test took away (`${channel}:${userId}`). */
const revoked = new Set<string>();
let dir: string;
let clock: ManualClock;
let proc: Process;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "pincer-scheduler-"));
  clock = new ManualClock("2025-03-01T10:00:00Z");
  proc = new Process(join(dir, "pincer.db"));
});

afterEach(() => {
  clock.dispose();
  revoked.clear();
  proc.close();
  rmSync(dir, { recursive: true, force: true });
});

async function addJob(p: Process, schedule: Schedule, message = "take the pizza out"): Promise<string> {
  const next = nextRun(schedule, new Date(clock.now()));
  if (!next) throw new Error("schedule has no future run");
  return (
    await p.store.add({
      message,
      schedule,
      tz: "Europe/Berlin",
      origin,
      owner: { channel: "telegram", userId: "42" },
      createdAt: clock.now(),
      nextRunAt: next.getTime(),
    })
  ).id;
}

const jobOf = (m: InboundMessage) => (m.channel === "system" && m.run.kind === "cron" ? m.run.jobId : undefined);

const published = async (p: Process) => {
  await clock.settle();
  return p.drain();
};

function restart(): void {
  proc.close();
  proc = new Process(join(dir, "pincer.db"));
}

describe("Scheduler", () => {
  it("fires a one-shot at its time into the origin conversation, once, then forgets it", async () => {
    const id = await addJob(proc, { kind: "at", at: clock.now() + 20 * MIN });
    proc.scheduler.start();
    await clock.settle();
    expect(clock.nextTimerAt).toBe(clock.now() + MIN); // the sleep cap

    await clock.advance(20 * MIN - 1);
    expect(await published(proc)).toEqual([]);
    await clock.advance(1);
    const [run, ...rest] = await published(proc);
    expect(rest).toEqual([]);
    expect(run).toMatchObject({
      channel: "system",
      chatId: "123",
      sessionKey: "telegram:123:thread:7",
      isGroup: true,
      id: `cron:${id}:${Date.parse("2025-03-01T10:20:00Z")}`,
      run: { kind: "cron", jobId: id, scheduledAt: Date.parse("2025-03-01T10:20:00Z") },
    });
    expect(run.text).toContain("take the pizza out");
    expect(run.text).toContain("Do not schedule it again");
    expect(run.text).not.toContain("late");
    expect(await proc.store.get(id)).toBeUndefined();

    await clock.advance(24 * 60 * MIN);
    expect(await published(proc)).toEqual([]);
  });

  it("sleeps no longer than the cap, so a forward clock jump or a job added elsewhere is noticed", async () => {
    proc.scheduler.start();
    await clock.settle();
    expect(clock.nextTimerAt).toBe(clock.now() + 60_000);
    // Another process (or a restore) adds a job without waking this scheduler.
    await addJob(proc, { kind: "at", at: clock.now() + 30_000 });
    clock.jump(2 * 60 * MIN);
    await clock.advance(60_000);
    expect(await published(proc)).toHaveLength(1);
  });

  it("after a restart, fires a one-shot that came due while down once, saying it is late", async () => {
    const id = await addJob(proc, { kind: "at", at: clock.now() + 5 * MIN });
    proc.scheduler.start();
    await clock.settle();
    restart(); // crash before the job was due; down for an hour
    clock.jump(65 * MIN);
    proc.scheduler.start();
    await clock.settle();
    const runs = await published(proc);
    expect(runs).toHaveLength(1);
    expect(runs[0].text).toMatch(/late: it was due at Sat 2025-03-01 11:05 Europe\/Berlin \(UTC\+01:00\), 1 h ago/);
    expect(await proc.store.get(id)).toBeUndefined();

    restart(); // the run's turn never finished: the inbox holds it for the worker, the scheduler does not fire again
    proc.scheduler.start();
    await clock.settle();
    expect(await published(proc)).toEqual([]);
    expect((await proc.journal.pendingInbound()).map(jobOf)).toEqual([id]);
  });

  it("runs a recurring job once for a missed period after a restart, then on its grid again", async () => {
    const anchor = clock.now();
    const id = await addJob(proc, { kind: "every", everySeconds: 600, anchor });
    proc.scheduler.start();
    await clock.settle();
    await clock.advance(10 * MIN);
    const [first] = await published(proc);
    expect(first.id).toBe(`cron:${id}:${anchor + 10 * MIN}`);
    await proc.finish(first);

    restart();
    clock.jump(47 * MIN); // down from 10:10 to 10:57: slots 10:20 … 10:50 missed
    proc.scheduler.start();
    await clock.settle();
    const catchUp = await published(proc);
    expect(catchUp).toHaveLength(1);
    expect(catchUp[0].id).toBe(`cron:${id}:${anchor + 20 * MIN}`);
    expect(catchUp[0].text).toContain("late");
    expect((await proc.store.get(id))?.nextRunAt).toBe(anchor + 60 * MIN);
    await proc.finish(catchUp[0]);

    await clock.advance(3 * MIN - 1);
    expect(await published(proc)).toEqual([]);
    await clock.advance(1);
    const [onTime] = await published(proc);
    expect(onTime.id).toBe(`cron:${id}:${anchor + 60 * MIN}`);
    expect(onTime.text).not.toContain("late");
  });

  it("never overlaps a recurring job with its own unfinished run", async () => {
    const id = await addJob(proc, { kind: "every", everySeconds: 60, anchor: clock.now() });
    proc.scheduler.start();
    await clock.settle();
    await clock.advance(MIN);
    const [first] = await published(proc);
    // The conversation is busy: the first run's turn has not finished when the next two slots come.
    await clock.advance(2 * MIN);
    expect(await published(proc)).toEqual([]);
    await proc.finish(first);
    await clock.advance(MIN);
    const [next] = await published(proc);
    expect(next.id).toBe(`cron:${id}:${clock.now()}`);
  });

  it("does not fire a job removed before its time", async () => {
    const id = await addJob(proc, { kind: "cron", expr: "30 11 * * *", tz: "Europe/Berlin" });
    proc.scheduler.start();
    await clock.settle();
    expect(await proc.store.remove(id, "telegram:999")).toBe(false);
    expect(await proc.store.remove(id, origin.sessionKey)).toBe(true);
    proc.scheduler.wake();
    await clock.settle();
    await clock.advance(2 * 24 * 60 * MIN);
    expect(await published(proc)).toEqual([]);
  });

  it("fires a cron expression at wall-clock time in its zone", async () => {
    // 11:30 in Berlin is 10:30 UTC in March (before the DST change).
    const id = await addJob(proc, { kind: "cron", expr: "30 11 * * *", tz: "Europe/Berlin" });
    proc.scheduler.start();
    await clock.settle();
    await clock.advance(30 * MIN);
    const [run] = await published(proc);
    expect(run.id).toBe(`cron:${id}:${Date.parse("2025-03-01T10:30:00Z")}`);
    expect(new Date((await proc.store.get(id))?.nextRunAt ?? 0).toISOString()).toBe("2025-03-02T10:30:00.000Z");
  });

  it("leaves jobs of channels this process does not serve to the process that does", async () => {
    const id = await addJob(proc, { kind: "at", at: clock.now() + MIN });
    proc.scheduler.start(["console"]);
    await clock.settle();
    await clock.advance(10 * MIN);
    expect(await published(proc)).toEqual([]);
    expect(await proc.store.get(id)).toBeDefined();
    restart();
    proc.scheduler.start(["console", "telegram"]);
    await clock.settle();
    expect((await published(proc)).map(jobOf)).toEqual([id]);
  });

  it("publishes each run at most once, even if asked to fire the same slot twice", async () => {
    const anchor = clock.now();
    const id = await addJob(proc, { kind: "every", everySeconds: 600, anchor });
    clock.jump(10 * MIN);
    expect(await proc.scheduler.runDue()).toBe(1);
    // Something (a restore of an old row) puts the job back on the slot that already went out.
    await proc.store.postpone(id, anchor + 10 * MIN);
    await proc.finish((await published(proc))[0]);
    expect(await proc.scheduler.runDue()).toBe(0);
    expect(await published(proc)).toEqual([]);
  });

  it("does not run the job of an owner who lost access: it is paused until they are approved again", async () => {
    const id = await addJob(proc, { kind: "every", everySeconds: 600, anchor: clock.now() });
    proc.scheduler.start();
    await clock.settle();
    revoked.add("telegram:42");
    await clock.advance(10 * MIN);
    expect(await published(proc)).toEqual([]);
    expect((await proc.store.get(id))?.pausedAt).toBe(clock.now());
    revoked.clear();
    await clock.advance(30 * MIN);
    expect(await published(proc)).toEqual([]);
    expect(await ownedJobs(sqliteSql(proc.db), "resume", { channel: "telegram", userId: "42" })).toBe(1);
    proc.scheduler.wake();
    await clock.settle();
    expect((await published(proc)).map(jobOf)).toEqual([id]);
  });

  it("fires a run asked for once, off schedule and while paused, keeping the schedule; an owner without access loses the ask", async () => {
    const id = await addJob(proc, { kind: "every", everySeconds: 3600, anchor: clock.now() });
    await proc.store.pause(id, clock.now(), "user");
    await proc.store.requestRun(id, clock.now());
    await proc.store.requestRun(id, clock.now() + 1);
    expect(await proc.scheduler.runDue()).toBe(1);
    const [run] = await published(proc);
    expect(run).toMatchObject({ id: `cron:${id}:now:${clock.now()}`, sessionKey: origin.sessionKey });
    expect(run.text).toContain("someone asked for a run now");
    expect(await proc.scheduler.runDue()).toBe(0);
    expect(await proc.store.get(id)).toMatchObject({ runCount: 1, nextRunAt: clock.now() + 3600_000 });

    revoked.add("telegram:42");
    await proc.store.requestRun(id, clock.now() + 2);
    expect(await proc.scheduler.runDue()).toBe(0);
    expect((await proc.store.get(id))?.runRequestedAt).toBeUndefined();
    expect(await published(proc)).toEqual([]);
  });

  it("survives SQLITE_BUSY from another process and re-arms its timer", async () => {
    const id = await addJob(proc, { kind: "at", at: clock.now() + MIN });
    proc.db.pragma("busy_timeout = 20");
    proc.scheduler.start();
    await clock.settle();
    // Another process holds the write lock when the job comes due: every write of this tick fails.
    const other = openDatabase(join(dir, "pincer.db"));
    other.exec("BEGIN EXCLUSIVE");
    await clock.advance(MIN);
    expect(await published(proc)).toEqual([]);
    expect(clock.nextTimerAt).toBeDefined();
    other.exec("COMMIT");
    other.close();
    await clock.advance(5_000);
    expect((await published(proc)).map(jobOf)).toEqual([id]);
  });

  it("re-arms its timer when a store call throws outright", async () => {
    const id = await addJob(proc, { kind: "at", at: clock.now() + MIN });
    const earliest = proc.store.earliestNextRun.bind(proc.store);
    let failures = 2;
    proc.store.earliestNextRun = async (channels) => {
      if (failures-- > 0) throw new Error("disk I/O error");
      return earliest(channels);
    };
    proc.scheduler.start();
    await clock.settle();
    expect(clock.nextTimerAt).toBe(clock.now() + 5_000);
    await clock.advance(MIN);
    expect((await published(proc)).map(jobOf)).toEqual([id]);
  });
});
