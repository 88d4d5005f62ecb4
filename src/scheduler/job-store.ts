import { randomBytes } from "node:crypto";
import type { ChannelName } from "../bus/types.js";
import type { Database } from "../store/database.js";
import type { Schedule } from "./schedule.js";

/** Where a job was created: its runs are addressed to this conversation and answered there. */
export interface JobOrigin {
  channel: ChannelName;
  chatId: string;
  threadId?: string;
  sessionKey: string;
  isGroup: boolean;
}

export interface CronJob {
  id: string;
  name?: string;
  /** What the user asked to be told or done when the job fires. */
  message: string;
  schedule: Schedule;
  /** The zone the job's times are shown in (and a cron expression is read in). */
  tz: string;
  origin: JobOrigin;
  createdAt: number;
  nextRunAt: number;
  lastRunAt?: number;
  /** The inbound message id of the latest run, to keep a recurring job from overlapping itself. */
  lastDeliveryId?: string;
}

export type NewJob = Omit<CronJob, "id" | "lastRunAt" | "lastDeliveryId">;

interface JobRow {
  id: string;
  name: string | null;
  message: string;
  kind: Schedule["kind"];
  at_ms: number | null;
  every_seconds: number | null;
  anchor_ms: number | null;
  cron_expr: string | null;
  tz: string;
  channel: ChannelName;
  chat_id: string;
  thread_id: string | null;
  session_key: string;
  is_group: number;
  created_at: number;
  next_run_at: number;
  last_run_at: number | null;
  last_delivery_id: string | null;
}

/** Cron jobs in SQLite. Every read goes to the database, so a `pincer cron remove` from another process is seen. */
export class JobStore {
  constructor(private readonly db: Database) {}

  /**
   * Runs `fn` in one transaction of the shared connection, so a job advanced and its run
   * published to the inbox (the journal shares the connection) commit together or not at all.
   */
  atomically<T>(fn: () => T): T {
    return this.db.transaction(fn)();
  }

  add(job: NewJob): CronJob {
    const id = this.freshId();
    const s = job.schedule;
    this.db
      .prepare(
        `INSERT INTO cron_jobs (id, name, message, kind, at_ms, every_seconds, anchor_ms, cron_expr, tz,
           channel, chat_id, thread_id, session_key, is_group, created_at, next_run_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        id,
        job.name ?? null,
        job.message,
        s.kind,
        s.kind === "at" ? s.at : null,
        s.kind === "every" ? s.everySeconds : null,
        s.kind === "every" ? s.anchor : null,
        s.kind === "cron" ? s.expr : null,
        job.tz,
        job.origin.channel,
        job.origin.chatId,
        job.origin.threadId ?? null,
        job.origin.sessionKey,
        job.origin.isGroup ? 1 : 0,
        job.createdAt,
        job.nextRunAt,
      );
    return { ...job, id };
  }

  get(id: string): CronJob | undefined {
    const row = this.db.prepare("SELECT * FROM cron_jobs WHERE id = ?").get(id) as JobRow | undefined;
    return row && toJob(row);
  }

  /** One conversation's jobs, soonest first. */
  listBySession(sessionKey: string): CronJob[] {
    return (
      this.db
        .prepare("SELECT * FROM cron_jobs WHERE session_key = ? ORDER BY next_run_at, id")
        .all(sessionKey) as JobRow[]
    ).map(toJob);
  }

  listAll(): CronJob[] {
    return (this.db.prepare("SELECT * FROM cron_jobs ORDER BY next_run_at, id").all() as JobRow[]).map(toJob);
  }

  countBySession(sessionKey: string): number {
    return this.db.prepare("SELECT count(*) FROM cron_jobs WHERE session_key = ?").pluck().get(sessionKey) as number;
  }

  /** Removes a job; with `sessionKey`, only if it belongs to that conversation. */
  remove(id: string, sessionKey?: string): boolean {
    const result =
      sessionKey === undefined
        ? this.db.prepare("DELETE FROM cron_jobs WHERE id = ?").run(id)
        : this.db.prepare("DELETE FROM cron_jobs WHERE id = ? AND session_key = ?").run(id, sessionKey);
    return result.changes === 1;
  }

  /** Jobs whose next run is at or before `now`, the most overdue first; only those of `channels` when given. */
  due(now: number, channels?: readonly ChannelName[]): CronJob[] {
    const [filter, params] = channelFilter(channels);
    return (
      this.db
        .prepare(`SELECT * FROM cron_jobs WHERE next_run_at <= ?${filter} ORDER BY next_run_at, id`)
        .all(now, ...params) as JobRow[]
    ).map(toJob);
  }

  earliestNextRun(channels?: readonly ChannelName[]): number | undefined {
    const [filter, params] = channelFilter(channels);
    return (
      (this.db
        .prepare(`SELECT min(next_run_at) FROM cron_jobs WHERE 1${filter}`)
        .pluck()
        .get(...params) as number | null) ?? undefined
    );
  }

  /** Moves a recurring job to its next run, recording the run that just went out (if any). */
  advance(id: string, nextRunAt: number, ran?: { at: number; deliveryId: string }): void {
    if (ran) {
      this.db
        .prepare("UPDATE cron_jobs SET next_run_at = ?, last_run_at = ?, last_delivery_id = ? WHERE id = ?")
        .run(nextRunAt, ran.at, ran.deliveryId, id);
    } else {
      this.db.prepare("UPDATE cron_jobs SET next_run_at = ? WHERE id = ?").run(nextRunAt, id);
    }
  }

  /** Short ids are easy to say in a chat; eight hex digits leave collisions to the retry. */
  private freshId(): string {
    for (;;) {
      const id = randomBytes(4).toString("hex");
      if (!this.db.prepare("SELECT 1 FROM cron_jobs WHERE id = ?").get(id)) return id;
    }
  }
}

function channelFilter(channels: readonly ChannelName[] | undefined): [string, string[]] {
  if (channels === undefined) return ["", []];
  return [` AND channel IN (${channels.map(() => "?").join(", ") || "NULL"})`, [...channels]];
}

function toJob(row: JobRow): CronJob {
  return {
    id: row.id,
    name: row.name ?? undefined,
    message: row.message,
    schedule: toSchedule(row),
    tz: row.tz,
    origin: {
      channel: row.channel,
      chatId: row.chat_id,
      threadId: row.thread_id ?? undefined,
      sessionKey: row.session_key,
      isGroup: row.is_group === 1,
    },
    createdAt: row.created_at,
    nextRunAt: row.next_run_at,
    lastRunAt: row.last_run_at ?? undefined,
    lastDeliveryId: row.last_delivery_id ?? undefined,
  };
}

function toSchedule(row: JobRow): Schedule {
  switch (row.kind) {
    case "at":
      return { kind: "at", at: row.at_ms as number };
    case "every":
      return { kind: "every", everySeconds: row.every_seconds as number, anchor: row.anchor_ms as number };
    case "cron":
      return { kind: "cron", expr: row.cron_expr as string, tz: row.tz };
  }
}
