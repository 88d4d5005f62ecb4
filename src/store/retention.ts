import { lstat, readdir, rm, rmdir } from "node:fs/promises";
import { join } from "node:path";
import type { Database } from "./database.js";

const DAY_MS = 24 * 60 * 60 * 1000;

/** How long pincer keeps what only grows (config `retention`, in days). */
export interface RetentionAges {
  auditDays: number;
  archivedConversationDays: number;
  deadLetterDays: number;
  mediaDays: number;
}

export interface Pruned {
  auditRows: number;
  conversations: number;
  messages: number;
  deadLetters: number;
}

/**
 * Deletes tool-audit rows, conversations archived by `/new` (with their messages) and dead
 * letters older than their ages, in one transaction. The open conversation of a chat is never
 * touched, however old: the context window already bounds what the model sees of it.
 */
export function pruneDatabase(db: Database, ages: Omit<RetentionAges, "mediaDays">, now = Date.now()): Pruned {
  return db.transaction((): Pruned => {
    const auditRows = db
      .prepare("DELETE FROM tool_audit WHERE created_at < ?")
      .run(now - ages.auditDays * DAY_MS).changes;
    const archivedBefore = now - ages.archivedConversationDays * DAY_MS;
    const old = "SELECT id FROM conversations WHERE archived_at IS NOT NULL AND archived_at < ?";
    const messages = db.prepare(`DELETE FROM messages WHERE conversation_id IN (${old})`).run(archivedBefore).changes;
    const conversations = db
      .prepare("DELETE FROM conversations WHERE archived_at IS NOT NULL AND archived_at < ?")
      .run(archivedBefore).changes;
    const deadLetters = db
      .prepare("DELETE FROM outbox WHERE status = 'dead' AND finished_at < ?")
      .run(now - ages.deadLetterDays * DAY_MS).changes;
    return { auditRows, conversations, messages, deadLetters };
  })();
}

/**
 * Deletes files under the media folder (received attachments, copies of sent ones) last modified
 * more than `mediaDays` ago, and the folders that leaves empty. Symlinks are removed, never followed.
 * Returns how many files went.
 */
export async function pruneMediaFiles(dir: string, mediaDays: number, now = Date.now()): Promise<number> {
  const before = now - mediaDays * DAY_MS;
  let removed = 0;
  async function walk(path: string, depth: number): Promise<boolean> {
    let entries: string[];
    try {
      entries = await readdir(path);
    } catch {
      return false;
    }
    let left = entries.length;
    for (const name of entries) {
      const child = join(path, name);
      const info = await lstat(child).catch(() => undefined);
      if (!info) continue;
      if (info.isDirectory()) {
        if (depth < 8 && (await walk(child, depth + 1))) {
          await rmdir(child).catch(() => {});
          left--;
        }
      } else if (info.mtimeMs < before) {
        await rm(child, { force: true });
        removed++;
        left--;
      }
    }
    return left === 0;
  }
  await walk(dir, 0);
  return removed;
}
