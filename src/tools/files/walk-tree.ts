import { closeSync, constants, fstatSync, openSync, type Stats } from "node:fs";
import { readdir } from "node:fs/promises";
import { attempt } from "../../attempt.js";
import { atPath, isOneOf } from "./safe-open.js";

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = constants;
const MAX_DEPTH = 64;
const SKIPPED_FOLDERS = new Set([".git", "node_modules"]);
/** Entries (files and folders) looked at per walk at most, so a huge tree cannot keep a call busy for ever. */
export const MAX_TREE_ENTRIES = 100_000;

/** A regular file met on the walk: its `/`-separated path below the start; `open` works during the visit only. */
export type TreeFile = { rel: string; open(): { fd: number; stats: Stats } | undefined };

/** Visits the regular files below an open folder in name order, skipping .git, node_modules and `hidden` (by identity).
 * All is opened from its folder's descriptor without following links: a folder swapped for a link is skipped, never
 * entered. `visit` returns false to stop; `truncated`: stopped at MAX_TREE_ENTRIES. */
export async function visitFiles(
  rootFd: number,
  hidden: readonly Stats[],
  signal: AbortSignal,
  visit: (file: TreeFile) => Promise<boolean | undefined> | boolean | undefined,
): Promise<{ truncated: boolean }> {
  let entries = 0;
  let stopped = false;

  async function walkDir(dirFd: number, prefix: string, depth: number): Promise<void> {
    const dirents = await readdir(atPath(dirFd, "."), { withFileTypes: true }).catch(() => []);
    dirents.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of dirents) {
      const { name } = entry;
      if (stopped || signal.aborted) return;
      if (++entries > MAX_TREE_ENTRIES) {
        stopped = true;
        return;
      }
      const rel = prefix ? `${prefix}/${name}` : name;
      if (entry.isFile()) {
        const open = () => openAt(dirFd, name, O_NONBLOCK, (stats) => stats.isFile() && !isOneOf(hidden, stats));
        if ((await visit({ rel, open })) === false) stopped = true;
      } else if (entry.isDirectory() && !SKIPPED_FOLDERS.has(name) && depth < MAX_DEPTH) {
        const child = openAt(dirFd, name, O_DIRECTORY, (stats) => !isOneOf(hidden, stats));
        if (!child) continue;
        try {
          await walkDir(child.fd, rel, depth + 1);
        } finally {
          closeSync(child.fd);
        }
      }
    }
  }

  await walkDir(rootFd, "", 0);
  return { truncated: stopped && entries > MAX_TREE_ENTRIES };
}

/** `name` in an open folder if `wanted` accepts it now; undefined once gone or a link (O_NOFOLLOW) since readdir. */
function openAt(dirFd: number, name: string, flags: number, wanted: (stats: Stats) => boolean) {
  const fd = attempt(() => openSync(atPath(dirFd, name), O_RDONLY | O_NOFOLLOW | flags));
  if (fd === undefined) return undefined;
  const stats = fstatSync(fd);
  if (wanted(stats)) return { fd, stats };
  closeSync(fd);
  return undefined;
}
