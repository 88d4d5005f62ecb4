import { lstat, readdir, rm, rmdir } from "node:fs/promises";
import { join } from "node:path";

const DAY_MS = 24 * 60 * 60 * 1000;

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
