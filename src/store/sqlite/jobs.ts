import { randomBytes } from "node:crypto";
import type { ChannelName } from "../../bus/types.js";
import { type JobRow, toJob } from "../rows.js";
import type { CronJob, JobOwner, JobSlot, JobStore, NewJob } from "../store.js";
import type { Database } from "./database.js";
import { acceptInbound } from "./journal.js";

/** Cron jobs in SQLite. Every read goes to the database, so a `pincer cron remove` from another process is seen. */
export class SqliteJobs implements JobStore {
  constructor(private readonly db: Database) {}

  async add(job: NewJob): Promise<CronJob> {
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

  async get(id: string): Promise<CronJob | undefined> {
    const row = this.db.prepare("SELECT * FROM cron_jobs WHERE id = ?").get(id) as JobRow | undefined;
    return row && toJob(row);
  }

  /** One conversation's jobs, soonest first. */
  async listBySession(sessionKey: string): Promise<CronJob[]> {
    return (
      this.db
        .prepare("SELECT * FROM cron_jobs WHERE session_key = ? ORDER BY next_run_at, id")
        .all(sessionKey) as JobRow[]
    ).map(toJob);
  }

  async listAll(): Promise<CronJob[]> {
    return (this.db.prepare("SELECT * FROM cron_jobs ORDER BY next_run_at, id").all() as JobRow[]).map(toJob);
  }

  async countBySession(sessionKey: string): Promise<number> {
    return this.db.prepare("SELECT count(*) FROM cron_jobs WHERE session_key = ?").pluck().get(sessionKey) as number;
  }

  /** Removes a job; with `sessionKey`, only if it belongs to that conversation. */
  async remove(id: string, sessionKey?: string): Promise<boolean> {
    const result =
      sessionKey === undefined
        ? this.db.prepare("DELETE FROM cron_jobs WHERE id = ?").run(id)
        : this.db.prepare("DELETE FROM cron_jobs WHERE id = ? AND session_key = ?").run(id, sessionKey);
    return result.changes === 1;
  }

  async pause(id: string, at: number): Promise<void> {
    this.db.prepare("UPDATE cron_jobs SET paused_at = ? WHERE id = ?").run(at, id);
  }

  /** Unpaused jobs whose next run is at or before `now`, the most overdue first; only those of `channels` when given. */
  async due(now: number, channels?: readonly ChannelName[]): Promise<CronJob[]> {
    const [filter, params] = channelFilter(channels);
    return (
      this.db
        .prepare(
          `SELECT * FROM cron_jobs WHERE next_run_at <= ? AND paused_at IS NULL${filter} ORDER BY next_run_at, id`,
        )
        .all(now, ...params) as JobRow[]
    ).map(toJob);
  }

  async earliestNextRun(channels?: readonly ChannelName[]): Promise<number | undefined> {
    const [filter, params] = channelFilter(channels);
    return (
      (this.db
        .prepare(`SELECT min(next_run_at) FROM cron_jobs WHERE paused_at IS NULL${filter}`)
        .pluck()
        .get(...params) as number | null) ?? undefined
    );
  }

  async postpone(id: string, nextRunAt: number): Promise<void> {
    this.db.prepare("UPDATE cron_jobs SET next_run_at = ? WHERE id = ?").run(nextRunAt, id);
  }

  async takeSlot(slot: JobSlot): Promise<{ taken: boolean; accepted: boolean }> {
    return this.db.transaction(() => {
      const { jobId, scheduledAt, nextRunAt, run } = slot;
      const moved =
        nextRunAt === null
          ? this.db.prepare("DELETE FROM cron_jobs WHERE id = ? AND next_run_at = ?").run(jobId, scheduledAt)
          : run
            ? this.db
                .prepare(
                  "UPDATE cron_jobs SET next_run_at = ?, last_run_at = ?, last_delivery_id = ? WHERE id = ? AND next_run_at = ?",
                )
                .run(nextRunAt, slot.ranAt ?? Date.now(), run.id, jobId, scheduledAt)
            : this.db
                .prepare("UPDATE cron_jobs SET next_run_at = ? WHERE id = ? AND next_run_at = ?")
                .run(nextRunAt, jobId, scheduledAt);
      if (moved.changes === 0) return { taken: false, accepted: false };
      return { taken: true, accepted: run ? acceptInbound(this.db, run) : false };
    })();
  }

  /** Short ids are easy to say in a chat; eight hex digits leave collisions to the retry. */
  private freshId(): string {
    for (;;) {
      const id = randomBytes(4).toString("hex");
      if (!this.db.prepare("SELECT 1 FROM cron_jobs WHERE id = ?").get(id)) return id;
    }
  }
}

/** Pauses every job this person created (their access was revoked), in the caller's transaction; returns how many. */
export function pauseOwnedBy(db: Database, owner: JobOwner, at: number): number {
  return db
    .prepare("UPDATE cron_jobs SET paused_at = ? WHERE owner_channel = ? AND owner_id = ? AND paused_at IS NULL")
    .run(at, owner.channel, owner.userId).changes;
}

/** Resumes the paused jobs of this person (approved again), in the caller's transaction; returns how many. */
export function resumeOwnedBy(db: Database, owner: JobOwner): number {
  return db
    .prepare("UPDATE cron_jobs SET paused_at = NULL WHERE owner_channel = ? AND owner_id = ? AND paused_at IS NOT NULL")
    .run(owner.channel, owner.userId).changes;
}

function channelFilter(channels: readonly ChannelName[] | undefined): [string, string[]] {
  if (channels === undefined) return ["", []];
  return [` AND channel IN (${channels.map(() => "?").join(", ") || "NULL"})`, [...channels]];
}
