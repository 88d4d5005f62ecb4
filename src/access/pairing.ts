import { randomInt } from "node:crypto";
import type { Database } from "../store/database.js";

/** No 0/O or 1/I: codes are read aloud and typed by hand. */
const ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789";

export interface PairingOptions {
  now?: () => number;
  /** How long a code stays valid. */
  ttlMs?: number;
  /** Open requests per channel; beyond that strangers get no new code (rate limit). */
  maxPending?: number;
}

export interface PairingRequest {
  channel: string;
  userId: string;
  userName: string;
  code: string;
  expiresAt: number;
}

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
   * A new code for a stranger, or undefined when they already hold a valid one (they were told
   * once) or too many requests are open on this channel.
   */
  request(channel: string, userId: string, userName: string): PairingRequest | undefined {
    const now = this.now();
    this.db.prepare("DELETE FROM pairing_requests WHERE expires_at <= ?").run(now);
    const existing = this.db
      .prepare("SELECT 1 FROM pairing_requests WHERE channel = ? AND user_id = ?")
      .get(channel, userId);
    if (existing) return undefined;
    const open = this.db
      .prepare("SELECT count(*) FROM pairing_requests WHERE channel = ?")
      .pluck()
      .get(channel) as number;
    if (open >= this.maxPending) return undefined;
    const request = { channel, userId, userName, code: newCode(), expiresAt: now + this.ttlMs };
    this.db
      .prepare(
        "INSERT INTO pairing_requests (channel, user_id, user_name, code, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
      )
      .run(channel, userId, userName, request.code, now, request.expiresAt);
    return request;
  }

  /** Approves the user behind a valid code; undefined when the code is unknown or expired. */
  approve(channel: string, code: string): PairingRequest | undefined {
    const row = this.db
      .prepare(
        "SELECT channel, user_id AS userId, user_name AS userName, code, expires_at AS expiresAt FROM pairing_requests WHERE channel = ? AND code = ? AND expires_at > ?",
      )
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

  pending(): PairingRequest[] {
    return this.db
      .prepare(
        "SELECT channel, user_id AS userId, user_name AS userName, code, expires_at AS expiresAt FROM pairing_requests WHERE expires_at > ? ORDER BY created_at",
      )
      .all(this.now()) as PairingRequest[];
  }

  approved(): Array<{ channel: string; userId: string; userName: string }> {
    return this.db
      .prepare("SELECT channel, user_id AS userId, user_name AS userName FROM approved_users ORDER BY approved_at")
      .all() as Array<{ channel: string; userId: string; userName: string }>;
  }
}

function newCode(): string {
  return Array.from({ length: 8 }, () => ALPHABET[randomInt(ALPHABET.length)]).join("");
}
