import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";

/** The absolute path of `binary` on PATH, or undefined. */
export function findBinary(binary: string, searchPath = process.env.PATH ?? ""): string | undefined {
  for (const dir of searchPath.split(delimiter).filter(Boolean)) {
    const candidate = join(dir, binary);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/**
 * Whether a system package a test file needs is installed. Missing on a developer's machine:
 * one loud line naming the apt package, and the caller skips. Missing in CI (`CI=true`): the
 * file fails, because CI must exercise every real component. `extraDir` is searched before PATH
 * (Debian puts PostgreSQL's server binaries outside it).
 */
export function hasSystemPackage(binary: string, aptPackage: string, extraDir = ""): boolean {
  if (findBinary(binary, [extraDir, process.env.PATH ?? ""].filter(Boolean).join(delimiter))) return true;
  const line = `${binary}, which is not installed (Debian package "${aptPackage}": apt install ${aptPackage})`;
  if (process.env.CI === "true") throw new Error(`CI runs every test, and some need ${line}.`);
  console.warn(`\n!!! SKIPPED: tests in this file need ${line}.\n`);
  return false;
}
