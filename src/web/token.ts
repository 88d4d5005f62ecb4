import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export function webTokenPath(home: string): string {
  return join(home, "web-token");
}

/**
 * The control page's token: PINCER_WEB_TOKEN when set, else the one kept in PINCER_HOME
 * (created on first use, readable by the owner only). A file someone widened is narrowed again.
 */
export function loadWebToken(home: string, fromEnv: string | undefined): string {
  if (fromEnv) return fromEnv;
  const path = webTokenPath(home);
  try {
    const token = readFileSync(path, "utf8").trim();
    if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600);
    if (token.length >= 16) return token;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  mkdirSync(home, { recursive: true, mode: 0o700 });
  const token = randomBytes(24).toString("base64url");
  writeFileSync(path, `${token}\n`, { mode: 0o600 });
  chmodSync(path, 0o600);
  return token;
}

/**
 * Compares a presented secret with the expected one in constant time. Both are hashed first,
 * so neither their length nor a common prefix shows in the timing.
 */
export function secretsEqual(presented: string, expected: string): boolean {
  const a = createHash("sha256").update(presented).digest();
  const b = createHash("sha256").update(expected).digest();
  return timingSafeEqual(a, b);
}
