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

/** Who created a job: it runs only while this person still has access. */
export interface JobOwner {
  channel: ChannelName;
  userId: string;
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
  /** Absent only for jobs from before owners were recorded whose owner could not be told; they do not run. */
  owner?: JobOwner;
  /** Set when the job was paused (its owner's access was revoked); a paused job never fires. */
  pausedAt?: number;
  createdAt: number;
  nextRunAt: number;
  lastRunAt?: number;
  /** The inbound message id of the latest run, to keep a recurring job from overlapping itself. */
  lastDeliveryId?: string;
}

export type NewJob = Omit<CronJob, "id" | "lastRunAt" | "lastDeliveryId" | "owner" | "pausedAt"> & { owner: JobOwner };

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
  owner_channel: ChannelName | null;
  owner_id: string | null;
  paused_at: number | null;
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
           channel, chat_id, thread_id, session_key, is_group, created_at, next_run_at, owner_channel, owner_id)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
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
        job.owner.channel,
        job.owner.userId,
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

  /** Pauses every job this person created (their access was revoked); returns how many. */
  pauseOwnedBy(owner: JobOwner, at: number): number {
    return this.db
      .prepare("UPDATE cron_jobs SET paused_at = ? WHERE owner_channel = ? AND owner_id = ? AND paused_at IS NULL")
      .run(at, owner.channel, owner.userId).changes;
  }

  /** Resumes the paused jobs of this person (approved again); returns how many. */
  resumeOwnedBy(owner: JobOwner): number {
    return this.db
      .prepare(
        "UPDATE cron_jobs SET paused_at = NULL WHERE owner_channel = ? AND owner_id = ? AND paused_at IS NOT NULL",
      )
      .run(owner.channel, owner.userId).changes;
  }

  pause(id: string, at: number): void {
    this.db.prepare("UPDATE cron_jobs SET paused_at = ? WHERE id = ?").run(at, id);
  }

  /**
   * Unpaused jobs whose next run is at or before `now`, the most overdue first; only those of
   * `channels` when given.
   */
  due(now: number, channels?: readonly ChannelName[]): CronJob[] {
    const [filter, params] = channelFilter(channels);
    return (
      this.db
        .prepare(
          `SELECT * FROM cron_jobs WHERE next_run_at <= ? AND paused_at IS NULL${filter} ORDER BY next_run_at, id`,
        )
        .all(now, ...params) as JobRow[]
    ).map(toJob);
  }

  earliestNextRun(channels?: readonly ChannelName[]): number | undefined {
    const [filter, params] = channelFilter(channels);
    return (
      (this.db
        .prepare(`SELECT min(next_run_at) FROM cron_jobs WHERE paused_at IS NULL${filter}`)
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
    owner: row.owner_channel && row.owner_id ? { channel: row.owner_channel, userId: row.owner_id } : undefined,
    pausedAt: row.paused_at ?? undefined,
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
