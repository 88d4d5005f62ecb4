import { lstat, readdir, rm, rmdir } from "node:fs/promises";
import { join } from "node:path";

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * Deletes files under the media folder (received attachments, copies of sent ones) last modified more than `mediaDays`
 * ago, and the folders that leaves empty. Symlinks are removed, never followed. Returns how many files went.
 */
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
  // The deepest first, so a folder that only held emptied folders goes too (rmdir leaves one with files).
  const folders = paths.filter((p) => p.folder).map((p) => p.path);
  for (const folder of folders.sort((a, b) => b.length - a.length)) await rmdir(folder).catch(() => {});
  return removed;
}
