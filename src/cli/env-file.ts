import { existsSync } from "node:fs";
import { resolve } from "node:path";

/**
 * Loads `.env` from the working directory into process.env. Variables already set in the
 * environment win, so systemd's Environment= and a shell's export override the file.
 */
export function loadEnvFile(path = resolve(".env")): boolean {
  if (!existsSync(path)) return false;
  process.loadEnvFile(path);
  return true;
}
