import { randomInt } from "node:crypto";
import type { Database } from "./database.js";

/** No 0/O or 1/I: codes are read aloud and typed by hand. */
const ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789";

export interface PairingOptions {
  now?: () => number;
  /** How long a code stays valid. */
  ttlMs?: number;
  /** Open requests per channel; at the cap the oldest one makes room for a new stranger. */
  maxPending?: number;
}

export interface PairingRequest {
  channel: string;
  userId: string;
  userName: string;
  code: string;
  expiresAt: number;
}

/** A stranger's open request as `request` returns it: whether it is new, and when they were last told. */
export interface OpenRequest extends PairingRequest {
  isNew: boolean;
  toldAt?: number;
}

const SELECT = "SELECT channel, user_id AS userId, user_name AS userName, code, expires_at AS expiresAt";

/** Pairing codes for strangers and the list of users the owner approved, in SQLite. */
export class PairingStore {
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

  isApproved(channel: string, userId: string): boolean {
    return (
      this.db.prepare("SELECT 1 FROM approved_users WHERE channel = ? AND user_id = ?").get(channel, userId) !==
      undefined
    );
  }

  /**
   * The stranger's one open code: the same code while it is valid, so asking again never piles
   * up requests. A new stranger always gets one; at the cap the oldest open request on the
   * channel makes room (a flood of strangers cannot lock the next real user out).
   */
  request(channel: string, userId: string, userName: string): OpenRequest {
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

  /** Records that the stranger was sent their code now (the gate repeats it only now and then). */
  markTold(channel: string, userId: string): void {
    this.db
      .prepare("UPDATE pairing_requests SET told_at = ? WHERE channel = ? AND user_id = ?")
      .run(this.now(), channel, userId);
  }

  /** Approves the user behind a valid code; undefined when the code is unknown or expired. */
  approve(channel: string, code: string): PairingRequest | undefined {
    const row = this.db
      .prepare(`${SELECT} FROM pairing_requests WHERE channel = ? AND code = ? AND expires_at > ?`)
      .get(channel, code.trim().toUpperCase(), this.now()) as PairingRequest | undefined;
    if (!row) return undefined;
    this.db.transaction(() => {
      this.db
        .prepare("INSERT OR REPLACE INTO approved_users (channel, user_id, user_name, approved_at) VALUES (?, ?, ?, ?)")
        .run(channel, row.userId, row.userName, this.now());
      this.db.prepare("DELETE FROM pairing_requests WHERE channel = ? AND user_id = ?").run(channel, row.userId);
    })();
    return row;
  }

  /** Takes back an approval (and any open code); false when the user was not approved. */
  revoke(channel: string, userId: string): boolean {
    return this.db.transaction(() => {
      this.db.prepare("DELETE FROM pairing_requests WHERE channel = ? AND user_id = ?").run(channel, userId);
      return (
        this.db.prepare("DELETE FROM approved_users WHERE channel = ? AND user_id = ?").run(channel, userId).changes ===
        1
      );
    })();
  }

  /** Drops a stranger's open request (the control page's Deny); false when there was none. */
  deny(channel: string, userId: string): boolean {
    return (
      this.db.prepare("DELETE FROM pairing_requests WHERE channel = ? AND user_id = ?").run(channel, userId).changes > 0
    );
  }

  pending(): PairingRequest[] {
    return this.db
      .prepare(`${SELECT} FROM pairing_requests WHERE expires_at > ? ORDER BY created_at`)
      .all(this.now()) as PairingRequest[];
  }

  approved(): Array<{ channel: string; userId: string; userName: string }> {
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
