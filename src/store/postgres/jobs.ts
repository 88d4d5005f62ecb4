import { randomBytes, randomInt } from "node:crypto";
import type pg from "pg";
import type { ChannelName } from "../../bus/types.js";
import { type JobRow, toJob } from "../rows.js";
import type {
  CronJob,
  JobOwner,
  JobSlot,
  JobStore,
  NewJob,
  OpenRequest,
  PairingOptions,
  PairingRequest,
  PairingStore,
} from "../store.js";
import { type Db, scalar, transaction } from "./db.js";
import { acceptInbound } from "./journal.js";

export class PostgresJobs implements JobStore {
  constructor(private readonly pool: pg.Pool) {}

  async add(job: NewJob): Promise<CronJob> {
    const s = job.schedule;
    // Short ids are easy to say in a chat; a collision (one in four billion) is retried.
    for (;;) {
      const id = randomBytes(4).toString("hex");
      const { rowCount } = await this.pool.query(
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
      if (rowCount === 1) return { ...job, id };
    }
  }

  async get(id: string): Promise<CronJob | undefined> {
    const { rows } = await this.pool.query<JobRow>("SELECT * FROM cron_jobs WHERE id = $1", [id]);
    return rows[0] && toJob(rows[0]);
  }

  listBySession(sessionKey: string): Promise<CronJob[]> {
    return this.list("WHERE session_key = $1", [sessionKey]);
  }

  listAll(): Promise<CronJob[]> {
    return this.list("", []);
  }

  async countBySession(sessionKey: string): Promise<number> {
    return (
      (await scalar<number>(this.pool, "SELECT count(*) FROM cron_jobs WHERE session_key = $1", [sessionKey])) ?? 0
    );
  }

  async remove(id: string, sessionKey?: string): Promise<boolean> {
    const { rowCount } =
      sessionKey === undefined
        ? await this.pool.query("DELETE FROM cron_jobs WHERE id = $1", [id])
        : await this.pool.query("DELETE FROM cron_jobs WHERE id = $1 AND session_key = $2", [id, sessionKey]);
    return rowCount === 1;
  }

  async pause(id: string, at: number): Promise<void> {
    await this.pool.query("UPDATE cron_jobs SET paused_at = $1 WHERE id = $2", [at, id]);
  }

  due(now: number, channels?: readonly ChannelName[]): Promise<CronJob[]> {
    return this.list(`WHERE next_run_at <= $1 AND paused_at IS NULL${channelFilter(channels, 2)}`, [
      now,
      ...(channels ? [[...channels]] : []),
    ]);
  }

  async earliestNextRun(channels?: readonly ChannelName[]): Promise<number | undefined> {
    const next = await scalar<number | null>(
      this.pool,
      `SELECT min(next_run_at) FROM cron_jobs WHERE paused_at IS NULL${channelFilter(channels, 1)}`,
      channels ? [[...channels]] : [],
    );
    return next ?? undefined;
  }

  async postpone(id: string, nextRunAt: number): Promise<void> {
    await this.pool.query("UPDATE cron_jobs SET next_run_at = $1 WHERE id = $2", [nextRunAt, id]);
  }

  /** SKIP LOCKED: a process that finds another taking this slot right now leaves it to that one. */
  takeSlot(slot: JobSlot): Promise<{ taken: boolean; accepted: boolean }> {
    return transaction(this.pool, async (tx) => {
      const { jobId, scheduledAt, nextRunAt, run } = slot;
      const { rowCount } = await tx.query(
        "SELECT 1 FROM cron_jobs WHERE id = $1 AND next_run_at = $2 FOR UPDATE SKIP LOCKED",
        [jobId, scheduledAt],
      );
      if (rowCount !== 1) return { taken: false, accepted: false };
      if (nextRunAt === null) await tx.query("DELETE FROM cron_jobs WHERE id = $1", [jobId]);
      else if (run) {
        await tx.query("UPDATE cron_jobs SET next_run_at = $1, last_run_at = $2, last_delivery_id = $3 WHERE id = $4", [
          nextRunAt,
          slot.ranAt ?? Date.now(),
          run.id,
          jobId,
        ]);
      } else await tx.query("UPDATE cron_jobs SET next_run_at = $1 WHERE id = $2", [nextRunAt, jobId]);
      return { taken: true, accepted: run ? await acceptInbound(tx, run) : false };
    });
  }

  private async list(where: string, params: unknown[]): Promise<CronJob[]> {
    const { rows } = await this.pool.query<JobRow>(`SELECT * FROM cron_jobs ${where} ORDER BY next_run_at, id`, params);
    return rows.map(toJob);
  }
}

function channelFilter(channels: readonly ChannelName[] | undefined, param: number): string {
  return channels === undefined ? "" : ` AND channel = ANY($${param}::text[])`;
}

/** No 0/O or 1/I: codes are read aloud and typed by hand. */
const ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
const SELECT = `SELECT channel, user_id AS "userId", user_name AS "userName", code, expires_at AS "expiresAt"`;

export class PostgresPairing implements PairingStore {
  private readonly now: () => number;
  private readonly ttlMs: number;
  private readonly maxPending: number;

  constructor(
    private readonly pool: pg.Pool,
    options: PairingOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.ttlMs = options.ttlMs ?? 60 * 60 * 1000;
    this.maxPending = options.maxPending ?? 10;
  }

  async isApproved(channel: string, userId: string): Promise<boolean> {
    const { rowCount } = await this.pool.query("SELECT 1 FROM approved_users WHERE channel = $1 AND user_id = $2", [
      channel,
      userId,
    ]);
    return rowCount === 1;
  }

  request(channel: string, userId: string, userName: string): Promise<OpenRequest> {
    const now = this.now();
    return transaction(this.pool, async (tx) => {
      // One channel's requests change one process at a time: the cap and the codes stay exact.
      await tx.query("SELECT pg_advisory_xact_lock(hashtext('pincer-pairing:' || $1))", [channel]);
      await tx.query("DELETE FROM pairing_requests WHERE expires_at <= $1", [now]);
      const { rows } = await tx.query<PairingRequest & { toldAt: number | null }>(
        `${SELECT}, told_at AS "toldAt" FROM pairing_requests WHERE channel = $1 AND user_id = $2`,
        [channel, userId],
      );
      if (rows[0]) return { ...rows[0], toldAt: rows[0].toldAt ?? undefined, isNew: false };
      await tx.query(
        `DELETE FROM pairing_requests WHERE (channel, user_id) IN (
           SELECT channel, user_id FROM pairing_requests WHERE channel = $1 ORDER BY created_at DESC, seq DESC OFFSET $2)`,
        [channel, this.maxPending - 1],
      );
      const request = { channel, userId, userName, code: await freshCode(tx, channel), expiresAt: now + this.ttlMs };
      await tx.query(
        "INSERT INTO pairing_requests (channel, user_id, user_name, code, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)",
        [channel, userId, userName, request.code, now, request.expiresAt],
      );
      return { ...request, isNew: true };
    });
  }

  async markTold(channel: string, userId: string): Promise<void> {
    await this.pool.query("UPDATE pairing_requests SET told_at = $1 WHERE channel = $2 AND user_id = $3", [
      this.now(),
      channel,
      userId,
    ]);
  }

  approve(channel: string, code: string): Promise<{ user: PairingRequest; resumedJobs: number } | undefined> {
    return transaction(this.pool, async (tx) => {
      const { rows } = await tx.query<PairingRequest>(
        `DELETE FROM pairing_requests WHERE channel = $1 AND code = $2 AND expires_at > $3
         RETURNING channel, user_id AS "userId", user_name AS "userName", code, expires_at AS "expiresAt"`,
        [channel, code.trim().toUpperCase(), this.now()],
      );
      const user = rows[0];
      if (!user) return undefined;
      await tx.query(
        `INSERT INTO approved_users (channel, user_id, user_name, approved_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (channel, user_id) DO UPDATE SET user_name = excluded.user_name, approved_at = excluded.approved_at`,
        [channel, user.userId, user.userName, this.now()],
      );
      return {
        user,
        resumedJobs: await ownedJobs(tx, "resume", { channel: channel as ChannelName, userId: user.userId }),
      };
    });
  }

  revoke(channel: string, userId: string, at = this.now()): Promise<{ revoked: boolean; pausedJobs: number }> {
    return transaction(this.pool, async (tx) => {
      await tx.query("DELETE FROM pairing_requests WHERE channel = $1 AND user_id = $2", [channel, userId]);
      const { rowCount } = await tx.query("DELETE FROM approved_users WHERE channel = $1 AND user_id = $2", [
        channel,
        userId,
      ]);
      const pausedJobs = await ownedJobs(tx, "pause", { channel: channel as ChannelName, userId }, at);
      return { revoked: rowCount === 1, pausedJobs };
    });
  }

  async deny(channel: string, userId: string): Promise<boolean> {
    const { rowCount } = await this.pool.query("DELETE FROM pairing_requests WHERE channel = $1 AND user_id = $2", [
      channel,
      userId,
    ]);
    return (rowCount ?? 0) > 0;
  }

  async pending(): Promise<PairingRequest[]> {
    const { rows } = await this.pool.query<PairingRequest>(
      `${SELECT} FROM pairing_requests WHERE expires_at > $1 ORDER BY created_at, seq`,
      [this.now()],
    );
    return rows;
  }

  async approved(): Promise<Array<{ channel: string; userId: string; userName: string }>> {
    const { rows } = await this.pool.query<{ channel: string; userId: string; userName: string }>(
      `SELECT channel, user_id AS "userId", user_name AS "userName" FROM approved_users ORDER BY approved_at`,
    );
    return rows;
  }
}

/** Pauses (revoked) or resumes (approved again) the jobs this person created; returns how many. */
async function ownedJobs(db: Db, action: "pause" | "resume", owner: JobOwner, at = 0): Promise<number> {
  const { rowCount } =
    action === "pause"
      ? await db.query(
          "UPDATE cron_jobs SET paused_at = $1 WHERE owner_channel = $2 AND owner_id = $3 AND paused_at IS NULL",
          [at, owner.channel, owner.userId],
        )
      : await db.query(
          "UPDATE cron_jobs SET paused_at = NULL WHERE owner_channel = $1 AND owner_id = $2 AND paused_at IS NOT NULL",
          [owner.channel, owner.userId],
        );
  return rowCount ?? 0;
}

/** Codes are unique per channel (the approve command names only the code). */
async function freshCode(db: Db, channel: string): Promise<string> {
  for (;;) {
    const code = Array.from({ length: 8 }, () => ALPHABET[randomInt(ALPHABET.length)]).join("");
    const { rowCount } = await db.query("SELECT 1 FROM pairing_requests WHERE channel = $1 AND code = $2", [
      channel,
      code,
    ]);
    if (rowCount === 0) return code;
  }
}
