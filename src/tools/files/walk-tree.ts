import { closeSync, constants, fstatSync, openSync, type Stats } from "node:fs";
import { readdir } from "node:fs/promises";
import { atPath } from "./safe-open.js";

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = constants;

export interface TreeFile {
  /** Path relative to the folder the walk started in, with `/` separators. */
  rel: string;
  /** Descriptor of the folder holding the file, valid only during the visit. */
  dirFd: number;
  name: string;
}

export interface TreeOptions {
  /** Folder names never entered (.git, node_modules). */
  skip: ReadonlySet<string>;
  /** Folders never entered, by identity (PINCER_HOME when it sits inside the workspace). */
  hidden: readonly Stats[];
  signal: AbortSignal;
  /** Stop after this many entries seen, so a huge tree cannot keep a call busy for ever. */
  maxEntries: number;
}

const MAX_DEPTH = 64;

/**
 * Visits the regular files below an open folder, depth first, in name order. Subfolders are opened
 * relative to their parent's descriptor without following links, so a folder swapped for a symlink
 * during the walk is skipped, never entered. Symlinks are not followed (the files they point to
 * inside the workspace are visited anyway). `visit` returns false to stop the walk.
 */
export async function visitFiles(
  rootFd: number,
  options: TreeOptions,
  visit: (file: TreeFile) => Promise<boolean | undefined> | boolean | undefined,
): Promise<{ entries: number; truncated: boolean }> {
  let entries = 0;
  let stopped = false;

  async function walkDir(dirFd: number, prefix: string, depth: number): Promise<void> {
    const dirents = await readdir(`/proc/self/fd/${dirFd}`, { withFileTypes: true }).catch(() => []);
    dirents.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of dirents) {
      if (stopped || options.signal.aborted) return;
      if (++entries > options.maxEntries) {
        stopped = true;
        return;
      }
      const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        if (options.skip.has(entry.name) || depth >= MAX_DEPTH) continue;
        const child = openDirAt(dirFd, entry.name);
        if (child === undefined) continue;
        try {
          const stats = fstatSync(child);
          if (options.hidden.some((h) => h.dev === stats.dev && h.ino === stats.ino)) continue;
          await walkDir(child, rel, depth + 1);
        } finally {
          closeSync(child);
        }
      } else if (entry.isFile()) {
        if ((await visit({ rel, dirFd, name: entry.name })) === false) stopped = true;
      }
    }
  }

  await walkDir(rootFd, "", 0);
  return { entries, truncated: stopped && entries > options.maxEntries };
}

function openDirAt(dirFd: number, name: string): number | undefined {
  try {
    return openSync(atPath(dirFd, name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  } catch {
    // Gone, or swapped for a symlink or a file since readdir: skip it.
    return undefined;
  }
}

/**
 * Opens a file inside an open folder for reading when it is a regular file now: O_NOFOLLOW so a
 * link swapped in is refused, O_NONBLOCK so a FIFO swapped in cannot block, fstat to verify.
 */
export function openRegularAt(dirFd: number, name: string): { fd: number; stats: Stats } | undefined {
  let fd: number;
  try {
    fd = openSync(atPath(dirFd, name), O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch {
    return undefined;
  }
  const stats = fstatSync(fd);
  if (!stats.isFile()) {
    closeSync(fd);
    return undefined;
  }
  return { fd, stats };
}
