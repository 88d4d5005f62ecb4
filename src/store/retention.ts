import { lstat, readdir, rm, rmdir } from "node:fs/promises";
import { join } from "node:path";
import { SqlGroup } from "./sql.js";
import type { RetentionAges } from "./types.js";

const HOUR_MS = 60 * 60 * 1000;
const DAY_MS = 24 * HOUR_MS;

/** Deletes media files older than `mediaDays` and the folders that leaves empty (symlinks removed, never followed). */
export async function pruneMediaFiles(dir: string, mediaDays: number, now = Date.now()): Promise<number> {
  const before = now - mediaDays * DAY_MS;
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  const paths = entries.map((entry) => ({ path: join(entry.parentPath, entry.name), folder: entry.isDirectory() }));
  let removed = 0;
  for (const { path, folder } of paths) {
    const info = folder ? undefined : await lstat(path).catch(() => undefined);
    if (info && info.mtimeMs < before) {
      await rm(path, { force: true });
      removed++;
    }
  }
  // The deepest first, so a folder that only held emptied folders goes too (rmdir leaves one with files). One changed
  // in the last hour stays: a download or a reply may have just made it and not yet opened its file.
  const folders = paths.filter((p) => p.folder).map((p) => p.path);
  for (const folder of folders.sort((a, b) => b.length - a.length)) {
    const info = await lstat(folder).catch(() => undefined);
    if (info && info.mtimeMs < now - HOUR_MS) await rmdir(folder).catch(() => {});
  }
  return removed;
}

export class SqlRetention extends SqlGroup {
  /** Deletes what only grows past its age, all or nothing; never a chat's open conversation (its window bounds it). */
  prune(ages: Omit<RetentionAges, "mediaDays" | "jobRunDays"> & { jobRunDays?: number }, now = Date.now()) {
    return this.db.transaction(async (tx) => {
      const before = (days: number) => [now - days * DAY_MS];
      const auditRows = await tx.run("DELETE FROM tool_audit WHERE created_at < $1", before(ages.auditDays));
      const archived = "FROM conversations WHERE archived_at IS NOT NULL AND archived_at < $1";
      const old = before(ages.archivedConversationDays);
      const messages = await tx.run(`DELETE FROM messages WHERE conversation_id IN (SELECT id ${archived})`, old);
      const conversations = await tx.run(`DELETE ${archived}`, old);
      const dead = "DELETE FROM outbox WHERE status = 'dead' AND finished_at < $1";
      const deadLetters = await tx.run(dead, before(ages.deadLetterDays));
      const usageRows = await tx.run("DELETE FROM model_usage WHERE created_at < $1", before(ages.usageDays));
      // Approvals are kept as long as the audit of the calls they let through (or not).
      await tx.run("DELETE FROM approvals WHERE expires_at < $1", before(ages.auditDays));
      const { jobRunDays } = ages;
      const jobRuns = jobRunDays ? await tx.run("DELETE FROM job_runs WHERE fired_at < $1", before(jobRunDays)) : 0;
      return { auditRows, conversations, messages, deadLetters, usageRows, jobRuns };
    });
  }
}
