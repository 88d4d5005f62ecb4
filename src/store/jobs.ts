import { randomBytes } from "node:crypto";
import type { ChannelName } from "../bus/types.js";
import type { Schedule } from "../scheduler/schedule.js";
import { acceptInbound } from "./journal.js";
import { placeholders, type Sql, scalar } from "./sql.js";
import type { CronJob, JobOwner, JobSlot, NewJob } from "./types.js";

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

/** Cron jobs. Every read goes to the database, so a `pincer cron remove` from another process is seen. */
export class SqlJobs {
  constructor(private readonly db: Sql) {}

  async add(job: NewJob): Promise<CronJob> {
    const s = job.schedule;
    // Short ids are easy to say in a chat; a collision (one in four billion) is retried.
    for (;;) {
      const id = randomBytes(4).toString("hex");
      const added = await this.db.run(
        `INSERT INTO cron_jobs (id, name, message, kind, at_ms, every_seconds, anchor_ms, cron_expr, tz, channel, chat_id,
           thread_id, session_key, is_group, created_at, next_run_at, owner_channel, owner_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18) ON CONFLICT (id) DO NOTHING`,
        [
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
        ],
      );
      if (added === 1) return { ...job, id };
    }
  }

  async get(id: string): Promise<CronJob | undefined> {
    return (await this.list("WHERE id = $1", [id]))[0];
  }

  /** One conversation's jobs, soonest first. */
  listBySession(sessionKey: string): Promise<CronJob[]> {
    return this.list("WHERE session_key = $1", [sessionKey]);
  }

  listAll(): Promise<CronJob[]> {
    return this.list("", []);
  }

  async countBySession(sessionKey: string): Promise<number> {
    return (await scalar<number>(this.db, "SELECT count(*) FROM cron_jobs WHERE session_key = $1", [sessionKey])) ?? 0;
  }

  /** Removes a job; with `sessionKey`, only if it belongs to that conversation. */
  async remove(id: string, sessionKey?: string): Promise<boolean> {
    const remove = "DELETE FROM cron_jobs WHERE id = $1 AND session_key = coalesce($2, session_key)";
    return (await this.db.run(remove, [id, sessionKey ?? null])) === 1;
  }

  async pause(id: string, at: number): Promise<void> {
    await this.db.run("UPDATE cron_jobs SET paused_at = $1 WHERE id = $2", [at, id]);
  }

  /** Unpaused jobs due at `now`, the most overdue first; only those of `channels` when given. */
  due(now: number, channels?: readonly ChannelName[]): Promise<CronJob[]> {
    return this.list(`WHERE next_run_at <= $1 AND paused_at IS NULL${channelFilter(channels, 2)}`, [
      now,
      ...(channels ?? []),
    ]);
  }

  async earliestNextRun(channels?: readonly ChannelName[]): Promise<number | undefined> {
    const next = await scalar<number | null>(
      this.db,
      `SELECT min(next_run_at) FROM cron_jobs WHERE paused_at IS NULL${channelFilter(channels, 1)}`,
      channels ?? [],
    );
    return next ?? undefined;
  }

  /** Moves a job to its next run without running it (a failed attempt waits). */
  async postpone(id: string, nextRunAt: number): Promise<void> {
    await this.db.run("UPDATE cron_jobs SET next_run_at = $1 WHERE id = $2", [nextRunAt, id]);
  }

  /**
   * Takes one slot of a job, all or nothing: moves (or removes) the job and accepts the run into
   * the inbox, only if the job is still at `scheduledAt` (no other process took it). `taken`:
   * the job moved; `accepted`: the run entered the inbox now (false for a replay).
   */
  takeSlot(slot: JobSlot): Promise<{ taken: boolean; accepted: boolean }> {
    const { jobId, scheduledAt, nextRunAt, run } = slot;
    return this.db.transaction(async (tx) => {
      // SKIP LOCKED (PostgreSQL): a process that finds another taking this slot right now leaves it to that one.
      if (tx.engine === "postgres") {
        const locked = await tx.rows(
          "SELECT 1 FROM cron_jobs WHERE id = $1 AND next_run_at = $2 FOR UPDATE SKIP LOCKED",
          [jobId, scheduledAt],
        );
        if (locked.length === 0) return { taken: false, accepted: false };
      }
      const moved =
        nextRunAt === null
          ? await tx.run("DELETE FROM cron_jobs WHERE id = $1 AND next_run_at = $2", [jobId, scheduledAt])
          : run
            ? await tx.run(
                "UPDATE cron_jobs SET next_run_at = $1, last_run_at = $2, last_delivery_id = $3 WHERE id = $4 AND next_run_at = $5",
                [nextRunAt, slot.ranAt ?? Date.now(), run.id, jobId, scheduledAt],
              )
            : await tx.run("UPDATE cron_jobs SET next_run_at = $1 WHERE id = $2 AND next_run_at = $3", [
                nextRunAt,
                jobId,
                scheduledAt,
              ]);
      if (moved === 0) return { taken: false, accepted: false };
      return { taken: true, accepted: run ? await acceptInbound(tx, run) : false };
    });
  }

  private async list(where: string, params: unknown[]): Promise<CronJob[]> {
    const rows = await this.db.rows<JobRow>(`SELECT * FROM cron_jobs ${where} ORDER BY next_run_at, id`, params);
    return rows.map(toJob);
  }
}

/** Pauses (revoked) or resumes (approved again) the jobs this person created, in the caller's transaction; returns how many. */
export function ownedJobs(db: Sql, action: "pause" | "resume", owner: JobOwner, at = 0): Promise<number> {
  return action === "pause"
    ? db.run("UPDATE cron_jobs SET paused_at = $1 WHERE owner_channel = $2 AND owner_id = $3 AND paused_at IS NULL", [
        at,
        owner.channel,
        owner.userId,
      ])
    : db.run(
        "UPDATE cron_jobs SET paused_at = NULL WHERE owner_channel = $1 AND owner_id = $2 AND paused_at IS NOT NULL",
        [owner.channel, owner.userId],
      );
}

function channelFilter(channels: readonly ChannelName[] | undefined, from: number): string {
  return channels === undefined ? "" : ` AND channel IN (${placeholders(channels, from)})`;
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
