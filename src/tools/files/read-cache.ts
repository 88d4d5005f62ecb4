import { type BigIntStats, closeSync, fstatSync, lstatSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { attempt } from "../../attempt.js";
import { readTextBeneath, type SafeText } from "./safe-io.js";
import { atPath, openInScope } from "./safe-open.js";

const STAMPED = ["dev", "ino", "mode", "size", "mtimeNs", "ctimeNs"] as const;
/** A component's path and its lstat (or, last, the fstat of what was read); no `stats`: nothing had this name. */
type Stamp = { path: string; stats?: BigIntStats };

// Younger components are not remembered: times are coarse (a 1–10 ms tick), so a same-size edit in the same tick
// would look unchanged; later changes show a newer ctime, which utimes cannot set back. 3 s for whole-second times.
const SETTLED_MS = 100;
/** A handful of paths are read every turn; anything beyond that is a surprise, not a working set. */
const MAX_ENTRIES = 256;

/** maxAgeMs, default 5 s: stamps miss a write through a shared mmap to a page already dirty (it changes no time). */
export type ReadCacheOptions = { now?: () => number; maxAgeMs?: number };

/** What the prompt reads every turn, kept while unchanged. A miss reads race-free and stamps what it read and each
 * folder on the way; a hit compares their lstat (device, inode, mode, size, ns times): a swapped-in link or an edit
 * (even with its mtime put back) no longer matches, and the race-free read, which refuses the link, runs again. */
export class ReadCache {
  private readonly entries = new Map<string, { stamps: Stamp[]; value: unknown; at: number }>();
  readonly stats = { hits: 0, misses: 0 };

  constructor(private readonly options: ReadCacheOptions = {}) {}

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

  /** The real (not linked) folders in `root/dir`, listed through its descriptor; [] when absent. */
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
    const unchanged = ({ path, stats }: Stamp) => {
      const now = lstatOrFail(path);
      return now !== "failed" && (stats ? !!now && same(stats, now) : now === undefined);
    };
    const expired = !entry || (this.options.now ?? Date.now)() - entry.at > (this.options.maxAgeMs ?? 5000);
    if (expired || !entry.stamps.every(unchanged)) {
      this.entries.delete(key);
      this.stats.misses++;
      return undefined;
    }
    this.stats.hits++;
    return entry.value;
  }

  /** Keeps `value` (read from `opened`; none: "does not exist") if the path still names it, link-free and settled. */
  private remember(key: string, value: unknown, root: string, parts: string[], opened?: BigIntStats): void {
    const stamps: Stamp[] = [];
    for (let i = 1; i <= parts.length; i++) {
      const path = join(root, ...parts.slice(0, i));
      const stats = lstatOrFail(path);
      if (stats === "failed" || (!stats && opened) || stats?.isSymbolicLink()) return;
      stamps.push({ path, stats });
      if (!stats) break;
    }
    const last = stamps.at(-1)?.stats;
    if (opened ? !last || !same(last, opened) : last) return;
    const at = (this.options.now ?? Date.now)();
    const now = BigInt(at) * 1_000_000n;
    const unsettled = ({ stats }: Stamp) => {
      if (!stats) return false;
      const coarse = stats.ctimeNs % 1_000_000_000n === 0n && stats.mtimeNs % 1_000_000_000n === 0n;
      const margin = BigInt(coarse ? 3000 : SETTLED_MS) * 1_000_000n;
      return stats.ctimeNs > now - margin || stats.mtimeNs > now - margin;
    };
    if (stamps.some(unsettled)) return;
    if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
    this.entries.set(key, { stamps, value, at });
  }
}

/** Never throws: the sandbox can `chmod 000` the workspace (no stamp covers it); such paths are not served nor kept. */
function lstatOrFail(path: string): BigIntStats | undefined | "failed" {
  return attempt(() => lstatSync(path, { bigint: true, throwIfNoEntry: false }), "failed" as const);
}

/** The components of a plain relative path (no `.`, `..` or empty parts), else undefined: those are not cached. */
function plainParts(relativePath: string): string[] | undefined {
  const parts = relativePath.split("/");
  return parts.every((p) => p !== "" && p !== "." && p !== "..") ? parts : undefined;
}

function same(a: BigIntStats, b: BigIntStats): boolean {
  return STAMPED.every((key) => a[key] === b[key]);
}
