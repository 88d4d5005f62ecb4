import { randomInt } from "node:crypto";
import { ownedJobs } from "./jobs.js";
import { exists, insert, type Sql, SqlGroup, upsert } from "./sql.js";
import type { OpenRequest, PairingRequest } from "./types.js";

/** No 0/O or 1/I: codes are read aloud and typed by hand. */
export const ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
const TTL_MS = 60 * 60 * 1000;
/** Open requests per channel; at the cap the oldest one makes room for a new stranger. */
const MAX_PENDING = 10;
const OF_USER = "WHERE channel = $1 AND user_id = $2";
const REQUEST = `channel, user_id AS "userId", user_name AS "userName", code, expires_at AS "expiresAt"`;

/** Pairing codes for strangers and the list of users the owner approved. */
export class SqlPairing extends SqlGroup {
  isApproved = (channel: string, userId: string) =>
    exists(this.db, `SELECT 1 FROM approved_users ${OF_USER}`, [channel, userId]);

  /** The stranger's one open code, the same while valid. A new stranger always gets one (at the cap the channel's
   * oldest request makes room): asking again never piles up requests, a flood of strangers cannot lock a real user out. */
  request(channel: string, userId: string, userName: string): Promise<OpenRequest> {
    const now = Date.now();
    return this.db.transaction(async (tx) => {
      // One channel's requests change one process at a time (PostgreSQL): the cap and the codes stay exact.
      if (tx.engine === "postgres") {
        await tx.rows("SELECT pg_advisory_xact_lock(hashtext('pincer-pairing:' || $1))", [channel]);
      }
      await tx.run("DELETE FROM pairing_requests WHERE expires_at <= $1", [now]);
      const [existing] = await tx.rows<PairingRequest & { toldAt: number | null }>(
        `SELECT ${REQUEST}, told_at AS "toldAt" FROM pairing_requests ${OF_USER}`,
        [channel, userId],
      );
      if (existing) return { ...existing, toldAt: existing.toldAt ?? undefined, isNew: false };
      const open = await tx.rows<{ user_id: string }>(
        `SELECT user_id FROM pairing_requests WHERE channel = $1 ORDER BY created_at DESC, ${tx.seq} DESC`,
        [channel],
      );
      for (const { user_id } of open.slice(MAX_PENDING - 1)) {
        await tx.run(`DELETE FROM pairing_requests ${OF_USER}`, [channel, user_id]);
      }
      const request = { channel, userId, userName, code: await freshCode(tx, channel), expiresAt: now + TTL_MS };
      await tx.run(...insert("pairing_requests", { ...request, createdAt: now }));
      return { ...request, isNew: true };
    });
  }

  markTold = (channel: string, userId: string) =>
    this.db.run(`UPDATE pairing_requests SET told_at = $3 ${OF_USER}`, [channel, userId, Date.now()]);

  /** Approves the user behind a valid code and resumes the jobs a revoke paused, all or nothing (undefined: no such code). */
  approve(channel: string, code: string): Promise<{ user: PairingRequest; resumedJobs: number } | undefined> {
    return this.db.transaction(async (tx) => {
      const [user] = await tx.rows<PairingRequest>(
        `DELETE FROM pairing_requests WHERE channel = $1 AND code = $2 AND expires_at > $3 RETURNING ${REQUEST}`,
        [channel, code.trim().toUpperCase(), Date.now()],
      );
      if (!user) return undefined;
      const approved = { channel, userId: user.userId, userName: user.userName, approvedAt: Date.now() };
      await tx.run(...upsert("approved_users", approved, ["channel", "userId"]));
      return { user, resumedJobs: await ownedJobs(tx, "resume", { channel, userId: user.userId }) };
    });
  }

  /** Takes back an approval (and any open code) and pauses the jobs the user created, all or nothing. */
  revoke(channel: string, userId: string, at = Date.now()): Promise<{ revoked: boolean; pausedJobs: number }> {
    return this.db.transaction(async (tx) => {
      await tx.run(`DELETE FROM pairing_requests ${OF_USER}`, [channel, userId]);
      const revoked = await tx.run(`DELETE FROM approved_users ${OF_USER}`, [channel, userId]);
      const pausedJobs = await ownedJobs(tx, "pause", { channel, userId }, at);
      return { revoked: revoked === 1, pausedJobs };
    });
  }

  /** Drops a stranger's open request (the control page's Deny); false when there was none. */
  deny = async (channel: string, userId: string) =>
    (await this.db.run(`DELETE FROM pairing_requests ${OF_USER}`, [channel, userId])) > 0;

  pending = () =>
    this.db.rows<PairingRequest>(
      `SELECT ${REQUEST} FROM pairing_requests WHERE expires_at > $1 ORDER BY created_at, ${this.db.seq}`,
      [Date.now()],
    );

  approved = () =>
    this.db.rows<Omit<PairingRequest, "code" | "expiresAt">>(
      `SELECT channel, user_id AS "userId", user_name AS "userName" FROM approved_users ORDER BY approved_at`,
    );
}

/** Codes are unique per channel (the approve command names only the code). */
async function freshCode(db: Sql, channel: string): Promise<string> {
  for (;;) {
    const code = Array.from({ length: 8 }, () => ALPHABET[randomInt(ALPHABET.length)]).join("");
    if (!(await exists(db, "SELECT 1 FROM pairing_requests WHERE channel = $1 AND code = $2", [channel, code])))
      return code;
  }
}
