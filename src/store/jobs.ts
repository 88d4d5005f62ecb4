import { randomBytes } from "node:crypto";
import type { ChannelName } from "../bus/types.js";
import type { Schedule } from "../scheduler/schedule.js";
import { acceptInbound } from "./journal.js";
import { camelCased, insert, placeholders, type Sql, SqlGroup, scalar, total } from "./sql.js";
import type { CronJob, JobOrigin, JobOwner, JobSlot, NewJob } from "./types.js";

/** A job as its table holds it, a column a field. */
type JobColumns = Omit<CronJob, "schedule" | "origin" | "owner"> &
  Omit<JobOrigin, "isGroup"> & {
    isGroup: number;
    kind: Schedule["kind"];
    atMs?: number;
    everySeconds?: number;
    anchorMs?: number;
    cronExpr?: string;
    ownerChannel?: ChannelName;
    ownerId?: string;
  };

/** Cron jobs. Every read goes to the database, so a `pincer cron remove` from another process is seen. */
export class SqlJobs extends SqlGroup {
  async add(job: NewJob): Promise<CronJob> {
    const { schedule: s, origin, owner } = job;
    // Short ids are easy to say in a chat; a collision (one in four billion) is retried.
    for (;;) {
      const id = randomBytes(4).toString("hex");
      const columns: JobColumns = {
        id,
        name: job.name,
        message: job.message,
        tz: job.tz,
        createdAt: job.createdAt,
        nextRunAt: job.nextRunAt,
        channel: origin.channel,
        chatId: origin.chatId,
        threadId: origin.threadId,
        sessionKey: origin.sessionKey,
        isGroup: origin.isGroup ? 1 : 0,
        kind: s.kind,
        atMs: s.kind === "at" ? s.at : undefined,
        everySeconds: s.kind === "every" ? s.everySeconds : undefined,
        anchorMs: s.kind === "every" ? s.anchor : undefined,
        cronExpr: s.kind === "cron" ? s.expr : undefined,
        ownerChannel: owner.channel,
        ownerId: owner.userId,
      };
      if ((await this.db.run(...insert("cron_jobs", columns, undefined, "ON CONFLICT (id) DO NOTHING"))) === 1) {
        return { ...job, id };
      }
    }
  }

  get = async (id: string): Promise<CronJob | undefined> => (await this.list("WHERE id = $1", [id]))[0];
  listBySession = (sessionKey: string) => this.list("WHERE session_key = $1", [sessionKey]);
  listAll = () => this.list("", []);
  countBySession = (sessionKey: string) =>
    total(this.db, "SELECT count(*) FROM cron_jobs WHERE session_key = $1", [sessionKey]);

  /** Removes a job; with `sessionKey`, only if it belongs to that conversation. */
  async remove(id: string, sessionKey?: string): Promise<boolean> {
    const remove = "DELETE FROM cron_jobs WHERE id = $1 AND session_key = coalesce($2, session_key)";
    return (await this.db.run(remove, [id, sessionKey ?? null])) === 1;
  }

  async pause(id: string, at: number): Promise<void> {
    await this.db.run("UPDATE cron_jobs SET paused_at = $1 WHERE id = $2", [at, id]);
  }

  /** Unpaused jobs due at `now`, the most overdue first; only those of `channels` when given. */
  due = (now: number, channels?: readonly ChannelName[]) =>
    this.list(`WHERE next_run_at <= $1 AND paused_at IS NULL${channelFilter(channels, 2)}`, [now, ...(channels ?? [])]);

  async earliestNextRun(channels?: readonly ChannelName[]): Promise<number | undefined> {
    const next = `SELECT min(next_run_at) FROM cron_jobs WHERE paused_at IS NULL${channelFilter(channels, 1)}`;
    return (await scalar<number | null>(this.db, next, channels ?? [])) ?? undefined;
  }

  /** Moves a job to its next run without running it (a failed attempt waits). */
  async postpone(id: string, nextRunAt: number): Promise<void> {
    await this.db.run("UPDATE cron_jobs SET next_run_at = $1 WHERE id = $2", [nextRunAt, id]);
  }

  /**
   * Takes one slot of a job, all or nothing: moves (or removes) the job and accepts the run into the inbox, only if the
   * job is still at `scheduledAt` (no other process took it). `taken`: the job moved; `accepted`: the run entered the
   * inbox now (false for a replay).
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
      const where = "WHERE id = $1 AND next_run_at = $2";
      const set = run ? "next_run_at = $3, last_run_at = $4, last_delivery_id = $5" : "next_run_at = $3";
      const ran = run ? [slot.ranAt ?? Date.now(), run.id] : [];
      const moved =
        nextRunAt === null
          ? await tx.run(`DELETE FROM cron_jobs ${where}`, [jobId, scheduledAt])
          : await tx.run(`UPDATE cron_jobs SET ${set} ${where}`, [jobId, scheduledAt, nextRunAt, ...ran]);
      if (moved === 0) return { taken: false, accepted: false };
      return { taken: true, accepted: run ? await acceptInbound(tx, run) : false };
    });
  }

  private async list(where: string, params: unknown[]): Promise<CronJob[]> {
    const rows = await this.db.rows(`SELECT * FROM cron_jobs ${where} ORDER BY next_run_at, id`, params);
    return rows.map(toJob);
  }
}

/** Pauses (revoked) or resumes (approved again) the jobs this person created, in the caller's transaction; returns how many. */
export function ownedJobs(db: Sql, action: "pause" | "resume", owner: JobOwner, at = 0): Promise<number> {
  const [set, paused, params] = action === "pause" ? ["$3", "IS NULL", [at]] : ["NULL", "IS NOT NULL", []];
  const update = `UPDATE cron_jobs SET paused_at = ${set} WHERE owner_channel = $1 AND owner_id = $2 AND paused_at ${paused}`;
  return db.run(update, [owner.channel, owner.userId, ...params]);
}

function channelFilter(channels: readonly ChannelName[] | undefined, from: number): string {
  return channels === undefined ? "" : ` AND channel IN (${placeholders(channels, from)})`;
}

function toJob(row: Record<string, unknown>): CronJob {
  const { kind, atMs, everySeconds, anchorMs, cronExpr, ownerChannel, ownerId, ...job } = camelCased<JobColumns>(row);
  const { channel, chatId, threadId, sessionKey, isGroup, ...times } = job;
  const schedule: Schedule =
    kind === "at"
      ? { kind, at: atMs as number }
      : kind === "every"
        ? { kind, everySeconds: everySeconds as number, anchor: anchorMs as number }
        : { kind, expr: cronExpr as string, tz: job.tz };
  return {
    ...times,
    schedule,
    origin: { channel, chatId, threadId, sessionKey, isGroup: isGroup === 1 },
    owner: ownerChannel && ownerId ? { channel: ownerChannel, userId: ownerId } : undefined,
  };
}
