import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export function webTokenPath(home: string): string {
  return join(home, "web-token");
}

/** PINCER_WEB_TOKEN, else the one kept in PINCER_HOME (made on first use, owner-only; a widened file is narrowed). */
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

export const hash = (secret: string) => createHash("sha256").update(secret).digest("base64url");

/** Constant-time comparison of hashes, so neither the length nor a common prefix shows in the timing. */
export function secretsEqual(presented: string, expected: string): boolean {
  return timingSafeEqual(Buffer.from(hash(presented)), Buffer.from(hash(expected)));
}
