import { randomBytes } from "node:crypto";
import { hash } from "./token.js";

/** A page left alone this long is logged out; any request with the session extends it. */
export const SESSION_IDLE_MS = 12 * 3600 * 1000;
const MAX_SESSIONS = 64;

/** The control page's logins, in memory: a random secret per login, kept by the page in localStorage and sent as a
 * header (see SESSION_HEADER). A restart (so a changed token) ends them all. Kept by hash, so the time a lookup takes
 * says nothing about the secret; `onEnd` holds what ends with the session (its open event streams). */
export class WebSessions {
  private readonly sessions = new Map<string, { lastUsed: number; onEnd: Set<() => void> }>();

  create(): string {
    const secret = randomBytes(32).toString("base64url");
    this.sessions.set(hash(secret), { lastUsed: Date.now(), onEnd: new Set() });
    // The oldest logins go first when someone logs in again and again (Map keeps insertion order).
    for (const key of this.sessions.keys()) {
      if (this.sessions.size <= MAX_SESSIONS) break;
      this.endKey(key);
    }
    return secret;
  }

  /** True for a live session (and extends it); an expired one is ended here. */
  check(secret: string): boolean {
    const key = hash(secret);
    const session = this.sessions.get(key);
    if (!session) return false;
    if (Date.now() - session.lastUsed > SESSION_IDLE_MS) {
      this.endKey(key);
      return false;
    }
    session.lastUsed = Date.now();
    return true;
  }

  /** Runs `fn` when the session ends (logout, expiry, eviction, close); returns how to stop that. */
  onEnd(secret: string, fn: () => void): () => void {
    const set = this.sessions.get(hash(secret))?.onEnd;
    set?.add(fn);
    return () => set?.delete(fn);
  }

  end(secret: string): boolean {
    return this.endKey(hash(secret));
  }

  endAll(): void {
    for (const key of [...this.sessions.keys()]) this.endKey(key);
  }

  private endKey(key: string): boolean {
    const session = this.sessions.get(key);
    if (!session) return false;
    this.sessions.delete(key);
    for (const fn of session.onEnd) fn();
    return true;
  }
}
