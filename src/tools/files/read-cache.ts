import { type BigIntStats, closeSync, fstatSync, lstatSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { atPath, openInScope } from "./safe-open.js";
import { readTextBeneath, type SafeText } from "./safe-read.js";

const STAMPED = ["dev", "ino", "mode", "size", "mtimeNs", "ctimeNs"] as const;
/** A component's identity and state, as lstat (or fstat of what was opened) reports it; `absent`: nothing has this name. */
type Stamp = { path: string; absent?: true } & Pick<BigIntStats, (typeof STAMPED)[number]>;

/**
 * A component whose change time is younger than this is not remembered: file times are coarse
 * (the kernel's clock tick, 1–10 ms), so a second edit of the same size in the same tick would
 * look unchanged. Once the time has passed, any later change shows a newer ctime, which no one
 * can set back (utimes sets mtime, and that changes ctime). Three seconds on file systems that
 * keep whole seconds (FAT keeps two).
 */
const SETTLED_MS = 100;
/** A handful of paths are read every turn; anything beyond that is a surprise, not a working set. */
const MAX_ENTRIES = 256;

export interface ReadCacheOptions {
  now?: () => number;
  /**
   * An entry is served for at most this long, then read anew. Stamps miss one kind of edit: a
   * write through a shared mmap to a page already dirty changes neither mtime nor ctime (the
   * kernel updates them on the page's first write fault only), so without an age limit such an
   * edit would stay unseen for good. Default 5 s.
   */
  maxAgeMs?: number;
}

/**
 * What the prompt reads every turn (the workspace files, the skill folders and their SKILL.md),
 * kept in memory while it is unchanged. Nothing is ever read by path: a miss reads race-free
 * through readTextBeneath and remembers the status of the descriptor it read from and of each
 * folder on the way. A hit only compares lstat of those paths with what was remembered (device,
 * inode, type and mode, size, mtime and ctime in nanoseconds): a symlink swapped in anywhere, a
 * file replaced or edited (even with its mtime put back) no longer matches, and the next read is
 * the race-free one again, which refuses the link. What a hit returns is always what was read
 * race-free from that very inode, at most maxAgeMs ago.
 */
export class ReadCache {
  /** Per key: every component from below the root down to what was read (all must be unchanged), and when. */
  private readonly entries = new Map<string, { stamps: Stamp[]; value: unknown; at: number }>();
  readonly stats = { hits: 0, misses: 0 };
  private readonly now: () => number;
  private readonly maxAgeMs: number;

  constructor(options: ReadCacheOptions = {}) {
    this.now = options.now ?? Date.now;
    this.maxAgeMs = options.maxAgeMs ?? 5000;
  }

  /** readTextBeneath(root, relativePath, maxBytes), from memory while nothing on the way changed. */
  text(root: string, relativePath: string, maxBytes: number): SafeText {
    const parts = plainParts(relativePath);
    const key = `t\0${maxBytes}\0${root}\0${relativePath}`;
    const hit = parts && this.lookup(key);
    if (hit) return hit as SafeText;
    const { stats, ...read } = readTextBeneath(root, relativePath, maxBytes);
    if (parts && (read.ok || /does not exist/.test(read.reason))) this.remember(key, read, root, parts, stats);
    return read;
  }

  /**
   * The real (not linked) folders directly inside `root/dir`, listed through a descriptor of that
   * folder (a link to it, or in it, is not followed); [] when it does not exist. Other problems throw.
   */
  folders(root: string, dir: string): string[] {
    const parts = plainParts(dir);
    const key = `d\0${root}\0${dir}`;
    const hit = parts && this.lookup(key);
    if (hit) return hit as string[];
    let fd: number;
    try {
      fd = openInScope(dir, { workspace: root }, { access: "read", want: "dir", noLinks: true }).fd;
    } catch (err) {
      if (!/does not exist/.test((err as Error).message)) throw err;
      if (parts) this.remember(key, [], root, parts, undefined);
      return [];
    }
    try {
      const stats = fstatSync(fd, { bigint: true });
      const names = readdirSync(atPath(fd, "."), { withFileTypes: true })
        .filter((entry) => entry.isDirectory())
        .map((entry) => entry.name);
      if (parts) this.remember(key, names, root, parts, stats);
      return names;
    } finally {
      closeSync(fd);
    }
  }

  private lookup(key: string): unknown {
    const entry = this.entries.get(key);
    const unchanged = (stamp: Stamp) => {
      const now = lstatOrFail(stamp.path);
      return now !== "failed" && (stamp.absent ? now === undefined : !!now && same(stamp, now));
    };
    if (!entry || this.now() - entry.at > this.maxAgeMs || !entry.stamps.every(unchanged)) {
      this.entries.delete(key);
      this.stats.misses++;
      return undefined;
    }
    this.stats.hits++;
    return entry.value;
  }

  /**
   * Remembers `value`, read from the descriptor whose status is `opened`, when the path still
   * names that very file, no component is a link, and every component has settled. Without
   * `opened` the value stands for "does not exist", remembered while a component is still missing.
   */
  private remember(key: string, value: unknown, root: string, parts: string[], opened?: BigIntStats): void {
    const stamps: Stamp[] = [];
    for (let i = 1; i <= parts.length; i++) {
      const path = join(root, ...parts.slice(0, i));
      const stats = lstatOrFail(path);
      if (stats === "failed") return;
      if (!stats && !opened) {
        stamps.push({ path, absent: true, dev: 0n, ino: 0n, mode: 0n, size: 0n, mtimeNs: 0n, ctimeNs: 0n });
        break;
      }
      if (!stats || stats.isSymbolicLink()) return;
      stamps.push({ path, ...Object.fromEntries(STAMPED.map((k) => [k, stats[k]])) } as Stamp);
    }
    const last = stamps[stamps.length - 1];
    if (!last || (opened ? !same(last, opened) : !last.absent)) return;
    const at = this.now();
    const now = BigInt(at) * 1_000_000n;
    const unsettled = (s: Stamp) => {
      const coarse = s.ctimeNs % 1_000_000_000n === 0n && s.mtimeNs % 1_000_000_000n === 0n;
      const margin = BigInt(coarse ? 3000 : SETTLED_MS) * 1_000_000n;
      return s.ctimeNs > now - margin || s.mtimeNs > now - margin;
    };
    if (stamps.some((s) => !s.absent && unsettled(s))) return;
    if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
    this.entries.set(key, { stamps, value, at });
  }
}

/**
 * lstat that does not throw: the sandbox owns the workspace and can make a path unreadable
 * (`chmod 000` on the workspace itself, which no stamp covers). Such a path is neither served
 * nor remembered; the race-free read then says why, and the turn goes on without the file.
 */
function lstatOrFail(path: string): BigIntStats | undefined | "failed" {
  try {
    return lstatSync(path, { bigint: true, throwIfNoEntry: false });
  } catch {
    return "failed";
  }
}

/** The components of a plain relative path (no `.`, `..` or empty parts), else undefined: those are not cached. */
function plainParts(relativePath: string): string[] | undefined {
  const parts = relativePath.split("/");
  return parts.every((p) => p !== "" && p !== "." && p !== "..") ? parts : undefined;
}

function same(a: Stamp, b: Pick<BigIntStats, (typeof STAMPED)[number]>): boolean {
  return STAMPED.every((key) => a[key] === b[key]);
}
