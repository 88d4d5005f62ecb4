import { randomBytes } from "node:crypto";
import { type ChannelName, type InboundMessage, routeOf } from "../bus/types.js";
import { acceptInbound } from "./journal.js";
import { camelCased, exists, insert, placeholders, type Sql, SqlGroup, scalar, snake } from "./sql.js";
import {
  type CronJob,
  type JobEdit,
  type JobLimits,
  type JobOrigin,
  type JobOwner,
  type JobPauseReason,
  type JobRun,
  type JobSlot,
  LIMIT_FIELDS,
  type NewJob,
  type Schedule,
} from "./types.js";

/** A job as its table holds it, a column a field. */
type JobColumns = Omit<CronJob, "schedule" | "origin" | "owner" | "limits"> &
  Omit<JobOrigin, "isGroup" | "channel" | "account"> &
  JobLimits & {
    channel: string;
    isGroup: number;
    kind: Schedule["kind"];
    atMs?: number;
    everySeconds?: number;
    anchorMs?: number;
    cronExpr?: string;
    ownerChannel?: string;
    ownerId?: string;
  };

/** The schedule's columns (the others NULL), as add and edit write them. */
function scheduleColumns(s: Schedule) {
  return {
    kind: s.kind,
    atMs: s.kind === "at" ? s.at : undefined,
    everySeconds: s.kind === "every" ? s.everySeconds : undefined,
    anchorMs: s.kind === "every" ? s.anchor : undefined,
    cronExpr: s.kind === "cron" ? s.expr : undefined,
  };
}

/** Cron jobs. Every read goes to the database, so a `pincer cron remove` from another process is seen. */
export class SqlJobs extends SqlGroup {
  async add(job: NewJob): Promise<CronJob> {
    const { schedule: s, origin, owner, limits = {} } = job;
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
        // The bot's route: a job is run where its bot runs, and answered through it.
        channel: routeOf(origin),
        chatId: origin.chatId,
        threadId: origin.threadId,
        sessionKey: origin.sessionKey,
        isGroup: origin.isGroup ? 1 : 0,
        ...scheduleColumns(s),
        ownerChannel: owner.channel,
        ownerId: owner.userId,
        runCount: 0,
        failures: 0,
        ...limits,
      };
      if ((await this.db.run(...insert("cron_jobs", columns, undefined, "ON CONFLICT (id) DO NOTHING"))) === 1) {
        return { ...job, id, runCount: 0, failures: 0, limits };
      }
    }
  }

  get = async (id: string): Promise<CronJob | undefined> => (await this.list("WHERE id = $1", [id]))[0];
  listBySession = (sessionKey: string) => this.list("WHERE session_key = $1", [sessionKey]);
  listByOwner = (owner: JobOwner) =>
    this.list("WHERE owner_channel = $1 AND owner_id = $2", [owner.channel, owner.userId]);
  listAll = () => this.list("", []);

  /** Removes a job; with `sessionKey`, only if it belongs to that conversation. */
  async remove(id: string, sessionKey?: string): Promise<boolean> {
    const remove = "DELETE FROM cron_jobs WHERE id = $1 AND session_key = coalesce($2, session_key)";
    return (await this.db.run(remove, [id, sessionKey ?? null])) === 1;
  }

  /** Pauses a running job; false when there is none, or it is paused already. */
  async pause(id: string, at: number, reason: JobPauseReason = "owner"): Promise<boolean> {
    const pause = "UPDATE cron_jobs SET paused_at = $1, paused_reason = $2 WHERE id = $3 AND paused_at IS NULL";
    return (await this.db.run(pause, [at, reason, id])) === 1;
  }

  /** Resumes a paused job at `nextRunAt` with its failures forgiven; false when there is none, or it is not paused. */
  async resume(id: string, nextRunAt: number): Promise<boolean> {
    const resume = `UPDATE cron_jobs SET paused_at = NULL, paused_reason = NULL, failures = 0, next_run_at = $1
       WHERE id = $2 AND paused_at IS NOT NULL`;
    return (await this.db.run(resume, [nextRunAt, id])) === 1;
  }

  /** Changes a job's text, schedule, zone (and stop rules when given); false when there is no such job. */
  edit = (id: string, { message, tz, nextRunAt, schedule, limits }: JobEdit) =>
    this.set(id, { message, tz, nextRunAt, ...scheduleColumns(schedule), ...(limits && limitColumns(limits)) });

  /** Sets a job's own stop rules (those absent: the config's); false when there is no such job. */
  setLimits = (id: string, limits: JobLimits) => this.set(id, limitColumns(limits));

  /** Asks for one run now (repeated asks before it fires are one run); false when there is no such job. */
  async requestRun(id: string, at: number): Promise<boolean> {
    const ask = "UPDATE cron_jobs SET run_requested_at = coalesce(run_requested_at, $1) WHERE id = $2";
    return (await this.db.run(ask, [at, id])) === 1;
  }

  dropRunRequest = (id: string, requestedAt: number) => {
    const drop = "UPDATE cron_jobs SET run_requested_at = NULL WHERE id = $1 AND run_requested_at = $2";
    return this.db.run(drop, [id, requestedAt]);
  };

  /** Jobs to fire at `now`: unpaused ones due, and any with a run asked for; only those of `channels` when given. */
  due = (now: number, channels?: readonly string[]) =>
    this.list(`WHERE ${DUE}${channelFilter(channels, 2)}`, [now, ...(channels ?? [])]);

  async earliestNextRun(channels?: readonly string[]): Promise<number | undefined> {
    const next = `SELECT min(CASE WHEN run_requested_at IS NOT NULL THEN run_requested_at WHEN paused_at IS NULL THEN next_run_at END)
      FROM cron_jobs WHERE true${channelFilter(channels, 1)}`;
    return (await scalar<number | null>(this.db, next, channels ?? [])) ?? undefined;
  }

  /** Moves a job to its next run without running it (a failed attempt waits). */
  postpone = (id: string, nextRunAt: number) =>
    this.db.run("UPDATE cron_jobs SET next_run_at = $1 WHERE id = $2", [nextRunAt, id]);

  /** Takes one slot of a job, all or nothing, only if the job is still at `scheduledAt` and not paused: moves (or
   * removes) the job and accepts the run (and its row). `taken`: the job moved; `accepted`: the run is new. */
  takeSlot(slot: JobSlot): Promise<{ taken: boolean; accepted: boolean }> {
    const { jobId, scheduledAt, nextRunAt, run } = slot;
    return this.db.transaction(async (tx) => {
      const where = "WHERE id = $1 AND next_run_at = $2 AND paused_at IS NULL";
      if (!(await unlocked(tx, where, [jobId, scheduledAt]))) return { taken: false, accepted: false };
      const set = run
        ? "next_run_at = $3, last_run_at = $4, last_delivery_id = $5, run_count = run_count + 1"
        : "next_run_at = $3";
      const ranAt = slot.ranAt ?? Date.now();
      const ran = run ? [ranAt, run.id] : [];
      const moved =
        nextRunAt === null
          ? await tx.run(`DELETE FROM cron_jobs ${where}`, [jobId, scheduledAt])
          : await tx.run(`UPDATE cron_jobs SET ${set} ${where}`, [jobId, scheduledAt, nextRunAt, ...ran]);
      if (moved === 0) return { taken: false, accepted: false };
      if (!run) return { taken: true, accepted: false };
      const accepted = await acceptInbound(tx, run);
      if (accepted) await startRun(tx, { run, jobId, trigger: "schedule", scheduledAt, firedAt: ranAt });
      return { taken: true, accepted };
    });
  }

  /** Takes a run asked for (Run now), all or nothing: clears the ask made at `requestedAt` and accepts the run. */
  takeRunRequest(jobId: string, requestedAt: number, run: InboundMessage, firedAt: number): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const where = "WHERE id = $1 AND run_requested_at = $2";
      if (!(await unlocked(tx, where, [jobId, requestedAt]))) return false;
      const set = "run_requested_at = NULL, last_run_at = $3, last_delivery_id = $4, run_count = run_count + 1";
      const moved = await tx.run(`UPDATE cron_jobs SET ${set} ${where}`, [jobId, requestedAt, firedAt, run.id]);
      if (moved === 0 || !(await acceptInbound(tx, run))) return false;
      await startRun(tx, { run, jobId, trigger: "manual", scheduledAt: requestedAt, firedAt });
      return true;
    });
  }

  private async list(where: string, params: unknown[]): Promise<CronJob[]> {
    return (await this.db.rows(`SELECT * FROM cron_jobs ${where} ORDER BY next_run_at, id`, params)).map(toJob);
  }

  private async set(id: string, fields: Record<string, unknown>): Promise<boolean> {
    const set = Object.keys(fields).map((field, i) => `${snake(field)} = $${i + 2}`);
    const params = [id, ...Object.values(fields).map((value) => value ?? null)];
    return (await this.db.run(`UPDATE cron_jobs SET ${set.join(", ")} WHERE id = $1`, params)) === 1;
  }
}

const limitColumns = (limits: JobLimits) => Object.fromEntries(LIMIT_FIELDS.map((field) => [field, limits[field]]));

/** SKIP LOCKED (PostgreSQL): a process that finds another taking this row right now leaves it to that one. */
async function unlocked(tx: Sql, where: string, params: unknown[]): Promise<boolean> {
  return tx.engine !== "postgres" || exists(tx, `SELECT 1 FROM cron_jobs ${where} FOR UPDATE SKIP LOCKED`, params);
}

const DUE = "((next_run_at <= $1 AND paused_at IS NULL) OR run_requested_at IS NOT NULL)";

/** A fired run's row, in the transaction that fired it: it is `running` until its turn ends. */
async function startRun(
  tx: Sql,
  fired: { run: InboundMessage; jobId: string; trigger: JobRun["trigger"]; scheduledAt: number; firedAt: number },
): Promise<void> {
  const cron = fired.run.channel === "system" && fired.run.run.kind === "cron" ? fired.run.run : undefined;
  const row = {
    id: fired.run.id,
    jobId: fired.jobId,
    sessionKey: fired.run.sessionKey,
    trigger: fired.trigger,
    scheduledAt: fired.scheduledAt,
    firedAt: fired.firedAt,
    outcome: "running",
    message: cron?.reminder,
    ownerId: cron?.userId,
  };
  await tx.run(...insert("job_runs", row, undefined, "ON CONFLICT (id) DO NOTHING"));
}

/** Pauses (revoked) or resumes (approved again) the jobs this person created, in the caller's transaction; returns
 * how many. A resume wakes only the jobs the revoke paused, not those someone paused on purpose. */
export function ownedJobs(db: Sql, action: "pause" | "resume", owner: JobOwner, at = 0): Promise<number> {
  const update =
    action === "pause"
      ? "UPDATE cron_jobs SET paused_at = $3, paused_reason = 'owner' WHERE owner_channel = $1 AND owner_id = $2 AND paused_at IS NULL"
      : `UPDATE cron_jobs SET paused_at = NULL, paused_reason = NULL WHERE owner_channel = $1 AND owner_id = $2
          AND paused_at IS NOT NULL AND coalesce(paused_reason, 'owner') = 'owner'`;
  return db.run(update, [owner.channel, owner.userId, ...(action === "pause" ? [at] : [])]);
}

function channelFilter(channels: readonly string[] | undefined, from: number): string {
  return channels === undefined ? "" : ` AND channel IN (${placeholders(channels, from)})`;
}

function toJob(row: Record<string, unknown>): CronJob {
  const { kind, atMs, everySeconds, anchorMs, cronExpr, ownerChannel, ownerId, ...job } = camelCased<JobColumns>(row);
  const { channel: route, chatId, threadId, sessionKey, isGroup, ...rest } = job;
  const schedule: Schedule =
    kind === "at"
      ? { kind, at: atMs as number }
      : kind === "every"
        ? { kind, everySeconds: everySeconds as number, anchor: anchorMs as number }
        : { kind, expr: cronExpr as string, tz: job.tz };
  const [channel, account] = route.split("@") as [ChannelName, string | undefined];
  const limits = Object.fromEntries(LIMIT_FIELDS.filter((f) => rest[f] !== undefined).map((f) => [f, rest[f]]));
  for (const field of LIMIT_FIELDS) delete rest[field];
  return {
    ...rest,
    schedule,
    origin: { channel, ...(account ? { account } : {}), chatId, threadId, sessionKey, isGroup: isGroup === 1 },
    owner: ownerChannel && ownerId ? { channel: ownerChannel, userId: ownerId } : undefined,
    limits,
  };
}
