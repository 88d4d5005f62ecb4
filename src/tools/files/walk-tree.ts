import { closeSync, constants, fstatSync, openSync, type Stats } from "node:fs";
import { readdir } from "node:fs/promises";
import { atPath } from "./safe-open.js";

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = constants;
const MAX_DEPTH = 64;
/** Folders never entered. */
const SKIPPED_FOLDERS = new Set([".git", "node_modules"]);
/** Entries (files and folders) looked at per walk at most, so a huge tree cannot keep a call busy for ever. */
export const MAX_TREE_ENTRIES = 100_000;

/** A regular file met on the walk: its path relative to the start (`/`-separated), and its folder's descriptor, valid during the visit. */
export type TreeFile = { rel: string; dirFd: number; name: string };

/**
 * Visits the regular files below an open folder, depth first, in name order, skipping .git,
 * node_modules and the `hidden` folders (by identity: PINCER_HOME inside the workspace).
 * Subfolders are opened relative to their parent's descriptor without following links, so a
 * folder swapped for a symlink during the walk is skipped, never entered. Symlinks are not
 * followed (the files they point to inside the workspace are visited anyway). `visit` returns
 * false to stop the walk; `truncated` says it stopped at MAX_TREE_ENTRIES.
 */
export async function visitFiles(
  rootFd: number,
  hidden: readonly Stats[],
  signal: AbortSignal,
  visit: (file: TreeFile) => Promise<boolean | undefined> | boolean | undefined,
): Promise<{ truncated: boolean }> {
  let entries = 0;
  let stopped = false;

  async function walkDir(dirFd: number, prefix: string, depth: number): Promise<void> {
    const dirents = await readdir(`/proc/self/fd/${dirFd}`, { withFileTypes: true }).catch(() => []);
    dirents.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of dirents) {
      if (stopped || signal.aborted) return;
      if (++entries > MAX_TREE_ENTRIES) {
        stopped = true;
        return;
      }
      const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
      if (entry.isFile()) {
        if ((await visit({ rel, dirFd, name: entry.name })) === false) stopped = true;
      } else if (entry.isDirectory() && !SKIPPED_FOLDERS.has(entry.name) && depth < MAX_DEPTH) {
        const child = openAt(dirFd, entry.name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
        if (child === undefined) continue;
        try {
          const stats = fstatSync(child);
          if (!hidden.some((h) => h.dev === stats.dev && h.ino === stats.ino)) await walkDir(child, rel, depth + 1);
        } finally {
          closeSync(child);
        }
      }
    }
  }

  await walkDir(rootFd, "", 0);
  return { truncated: stopped && entries > MAX_TREE_ENTRIES };
}

/** Opens `name` inside an open folder; undefined when it is gone, or swapped for a link (O_NOFOLLOW) since readdir. */
function openAt(dirFd: number, name: string, flags: number): number | undefined {
  try {
    return openSync(atPath(dirFd, name), flags);
  } catch {
    return undefined;
  }
}

/**
 * Opens a file inside an open folder for reading when it is a regular file now: O_NOFOLLOW so a
 * link swapped in is refused, O_NONBLOCK so a FIFO swapped in cannot block, fstat to verify.
 */
export function openRegularAt(dirFd: number, name: string): { fd: number; stats: Stats } | undefined {
  const fd = openAt(dirFd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  if (fd === undefined) return undefined;
  const stats = fstatSync(fd);
  if (stats.isFile()) return { fd, stats };
  closeSync(fd);
  return undefined;
}
