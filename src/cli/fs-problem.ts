import { accessSync, constants, statSync } from "node:fs";
import { dirname } from "node:path";

const REASONS: Record<string, string> = {
  EACCES: "permission denied",
  EPERM: "operation not permitted",
  ENOTDIR: "a part of the path is a file, not a folder",
  EISDIR: "it is a folder where a file was expected",
  EEXIST: "something else already exists there",
  EROFS: "the file system is read-only",
  ENOSPC: "the disk is full",
  ELOOP: "too many symbolic links",
  ENAMETOOLONG: "the path is too long",
};

/** One sentence for a user's file-system mistake with PINCER_HOME or PINCER_WORKSPACE; undefined for any other error
 * (a bug, which keeps its stack trace). */
export function describeFsProblem(err: unknown): string | undefined {
  const e = err as NodeJS.ErrnoException | undefined;
  if (!e || typeof e !== "object") return undefined;
  if (typeof e.code === "string" && e.code.startsWith("SQLITE_CANTOPEN")) {
    return "cannot open the database in PINCER_HOME: make sure the folder exists and this user can write it (pincer doctor checks it).";
  }
  const reason = e.code ? REASONS[e.code] : undefined;
  if (!reason || !e.path) return undefined;
  return `cannot use ${e.path} (${reason}): PINCER_HOME and PINCER_WORKSPACE must be folders this user can create and write; fix the permissions or point them elsewhere.`;
}

/** What keeps `path` from being or becoming a folder this user writes (its nearest existing `ancestor` decides). */
export function folderProblem(path: string, ancestor = path): string | undefined {
  let isDir: boolean;
  try {
    isDir = statSync(ancestor).isDirectory();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const parent = dirname(ancestor);
    if ((code === "ENOENT" || code === "ENOTDIR") && parent !== ancestor) return folderProblem(path, parent);
    return `${ancestor} cannot be read (${code ? (REASONS[code] ?? code) : "unknown error"})`;
  }
  if (!isDir) return `${ancestor} is a file, so ${path} cannot be a folder`;
  try {
    accessSync(ancestor, constants.W_OK | constants.X_OK);
  } catch {
    return `${ancestor} is not writable by this user`;
  }
}
