import { randomInt } from "node:crypto";
import type { JobOwner, OpenRequest, PairingOptions, PairingRequest, PairingStore } from "../store.js";
import type { Database } from "./database.js";
import { pauseOwnedBy, resumeOwnedBy } from "./jobs.js";

/** No 0/O or 1/I: codes are read aloud and typed by hand. */
const ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789";

type JobChannel = JobOwner["channel"];

const SELECT = "SELECT channel, user_id AS userId, user_name AS userName, code, expires_at AS expiresAt";

/** Pairing codes for strangers and the list of users the owner approved, in SQLite. */
export class SqlitePairing implements PairingStore {
  private readonly now: () => number;
  private readonly ttlMs: number;
  private readonly maxPending: number;

  constructor(
    private readonly db: Database,
    options: PairingOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.ttlMs = options.ttlMs ?? 60 * 60 * 1000;
    this.maxPending = options.maxPending ?? 10;
  }

  async isApproved(channel: string, userId: string): Promise<boolean> {
    return (
      this.db.prepare("SELECT 1 FROM approved_users WHERE channel = ? AND user_id = ?").get(channel, userId) !==
      undefined
    );
  }

  /** Asking again never piles up requests; a flood of strangers cannot lock the next real user out. */
  async request(channel: string, userId: string, userName: string): Promise<OpenRequest> {
    const now = this.now();
    return this.db.transaction((): OpenRequest => {
      this.db.prepare("DELETE FROM pairing_requests WHERE expires_at <= ?").run(now);
      const existing = this.db
        .prepare(`${SELECT}, told_at AS toldAt FROM pairing_requests WHERE channel = ? AND user_id = ?`)
        .get(channel, userId) as (PairingRequest & { toldAt: number | null }) | undefined;
      if (existing) return { ...existing, toldAt: existing.toldAt ?? undefined, isNew: false };
      this.db
        .prepare(
          `DELETE FROM pairing_requests WHERE rowid IN (
             SELECT rowid FROM pairing_requests WHERE channel = ? ORDER BY created_at DESC, rowid DESC LIMIT -1 OFFSET ?)`,
        )
        .run(channel, this.maxPending - 1);
      const request = { channel, userId, userName, code: this.freshCode(channel), expiresAt: now + this.ttlMs };
      this.db
        .prepare(
          "INSERT INTO pairing_requests (channel, user_id, user_name, code, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
        )
        .run(channel, userId, userName, request.code, now, request.expiresAt);
      return { ...request, isNew: true };
    })();
  }

  async markTold(channel: string, userId: string): Promise<void> {
    this.db
      .prepare("UPDATE pairing_requests SET told_at = ? WHERE channel = ? AND user_id = ?")
      .run(this.now(), channel, userId);
  }

  async approve(channel: string, code: string): Promise<{ user: PairingRequest; resumedJobs: number } | undefined> {
    return this.db.transaction(() => {
      const user = this.db
        .prepare(`${SELECT} FROM pairing_requests WHERE channel = ? AND code = ? AND expires_at > ?`)
        .get(channel, code.trim().toUpperCase(), this.now()) as PairingRequest | undefined;
      if (!user) return undefined;
      this.db
        .prepare("INSERT OR REPLACE INTO approved_users (channel, user_id, user_name, approved_at) VALUES (?, ?, ?, ?)")
        .run(channel, user.userId, user.userName, this.now());
      this.db.prepare("DELETE FROM pairing_requests WHERE channel = ? AND user_id = ?").run(channel, user.userId);
      return { user, resumedJobs: resumeOwnedBy(this.db, { channel: channel as JobChannel, userId: user.userId }) };
    })();
  }

  async revoke(channel: string, userId: string, at = this.now()): Promise<{ revoked: boolean; pausedJobs: number }> {
    return this.db.transaction(() => {
      this.db.prepare("DELETE FROM pairing_requests WHERE channel = ? AND user_id = ?").run(channel, userId);
      const revoked =
        this.db.prepare("DELETE FROM approved_users WHERE channel = ? AND user_id = ?").run(channel, userId).changes ===
        1;
      return { revoked, pausedJobs: pauseOwnedBy(this.db, { channel: channel as JobChannel, userId }, at) };
    })();
  }

  /** Drops a stranger's open request (the control page's Deny); false when there was none. */
  async deny(channel: string, userId: string): Promise<boolean> {
    return (
      this.db.prepare("DELETE FROM pairing_requests WHERE channel = ? AND user_id = ?").run(channel, userId).changes > 0
    );
  }

  async pending(): Promise<PairingRequest[]> {
    return this.db
      .prepare(`${SELECT} FROM pairing_requests WHERE expires_at > ? ORDER BY created_at`)
      .all(this.now()) as PairingRequest[];
  }

  async approved(): Promise<Array<{ channel: string; userId: string; userName: string }>> {
    return this.db
      .prepare("SELECT channel, user_id AS userId, user_name AS userName FROM approved_users ORDER BY approved_at")
      .all() as Array<{ channel: string; userId: string; userName: string }>;
  }

  /** Codes are unique per channel (the approve command names only the code). */
  private freshCode(channel: string): string {
    for (;;) {
      const code = Array.from({ length: 8 }, () => ALPHABET[randomInt(ALPHABET.length)]).join("");
      if (!this.db.prepare("SELECT 1 FROM pairing_requests WHERE channel = ? AND code = ?").get(channel, code)) {
        return code;
      }
    }
  }
}
