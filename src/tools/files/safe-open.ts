/** Race-free file access beneath a root. A sandboxed command can swap any workspace folder for a symlink to the host
 * between a check and an open, so every path is walked a component at a time from the root's descriptor, like openat(2)
 * (`/proc/self/fd/<dirfd>/<name>`: Node has no openat), each folder opened O_NOFOLLOW: a swapped-in link fails (ELOOP).
 * Links that stay inside are resolved by pincer and walked the same way. Needing no process (unlike a bwrap file
 * server), this covers prompt files and start-up too. Files are lstat-ed first (devices, sockets and FIFOs are never
 * opened), opened O_NONBLOCK (a FIFO swapped in cannot block a thread) and fstat-ed after. */

import type { Stats } from "node:fs";
import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, readlinkSync, realpathSync } from "node:fs";
import { isAbsolute, relative, resolve, sep } from "node:path";
import { attempt } from "../../attempt.js";
import { ToolError } from "../tool.js";

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = constants;
/** Like Linux's own limit on symlinks followed in one lookup. */
const MAX_LINKS = 40;
/** Folders held open at once in one walk: a tree 10,000 deep must not use up pincer's descriptors. */
const MAX_DEPTH = 256;

/** Where file access may reach: every root is walked from a descriptor; nothing outside is reachable. */
export interface PathScope {
  workspace: string;
  /** Extra folders that may be read but never written (the media folder with users' attachments). */
  readRoots?: string[];
  /** Extra folders that may be written too (`shared/` for a person whose role may). */
  writeRoots?: string[];
  /** Off-limits even inside the workspace, by identity: PINCER_HOME, and MEMORY.md for a chat that may not see it. */
  hidden?: string[];
}

export interface OpenRequest {
  /** "edit": allowed only where writing is, but opened for reading (edit_file reads, then writes anew). */
  access: "read" | "write" | "edit";
  want: "file" | "dir" | "any";
  /** Writing a file: create it (and missing folders) when absent. */
  create?: boolean;
  /** Creating: fail when anything (a file, a link, even a dangling one) already has the name. */
  exclusive?: boolean;
  /** Refuse every symlink on the way, even one that stays inside (prompt and skill files). */
  noLinks?: boolean;
}

/** An open descriptor of something inside the scope; close it when done. */
export interface Opened {
  fd: number;
  stats: Stats;
  /** The path walked (symlinks resolved), for messages and display; never opened again by path. */
  path: string;
  created: boolean;
}

/** `openat(dirfd, name)` for Node: the kernel resolves the fd link to the folder the descriptor holds. */
export function atPath(dirFd: number, name: string): string {
  return `/proc/self/fd/${dirFd}/${name}`;
}

export function isInside(parent: string, child: string): boolean {
  const rel = relative(parent, child);
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

/** Opens what a model-given path (relative to the workspace, or absolute) names in scope; the caller closes `fd`. */
export function openInScope(input: string | undefined, scope: PathScope, request: OpenRequest): Opened {
  const raw = input?.trim() || ".";
  if (raw === "~" || raw.startsWith("~/")) {
    throw new ToolError(`"${raw}": ~ is not expanded; paths are relative to the workspace, so drop the "~/".`);
  }
  const workspace = realOr(scope.workspace, undefined);
  if (!workspace) throw new ToolError(`the workspace ${scope.workspace} does not exist.`);
  const candidate = resolve(workspace, raw);
  // The deepest root holding the path lexically, by its configured or its real spelling.
  let best: { real: string; path: string; writable: boolean } | undefined;
  const writable = 1 + (scope.writeRoots?.length ?? 0);
  for (const [i, configured] of [scope.workspace, ...(scope.writeRoots ?? []), ...(scope.readRoots ?? [])].entries()) {
    const real = i === 0 ? workspace : realOr(configured, undefined);
    if (!real) continue;
    for (const path of new Set([resolve(configured), real])) {
      if (isInside(path, candidate) && path.length >= (best?.path.length ?? 0))
        best = { real, path, writable: i < writable };
    }
  }
  if (!best) {
    throw new ToolError(
      `"${raw}" leads outside the workspace; only files inside ${workspace} can be used (relative paths start there).`,
    );
  }
  if (request.access !== "read" && !best.writable) {
    throw new ToolError(`"${raw}" is in a read-only folder (received files, shared/, skills); write in the workspace.`);
  }
  const rest = relative(best.path, candidate);
  return walk(best.real, rest === "" ? [] : rest.split(sep), raw, request, hiddenBelow(scope, best.real));
}

/** The hidden folders a walk from `rootReal` could reach, by identity; one holding the root (PINCER_HOME) is not. */
export function hiddenBelow(scope: PathScope, rootReal: string): Stats[] {
  return (scope.hidden ?? []).flatMap((path) => {
    const real = realOr(path, path);
    return isInside(real, rootReal) ? [] : attempt(() => [lstatSync(real)], []);
  });
}

/** Whether `stats` is one of `files`, by identity (device and inode). */
export function isOneOf(files: readonly Stats[], stats: Stats): boolean {
  return files.some((file) => file.dev === stats.dev && file.ino === stats.ino);
}

function realOr<T>(path: string, fallback: T): string | T {
  return attempt(() => realpathSync(path), fallback);
}

/** `stack` holds the descriptors from the root down, so `..` pops back up without a lookup, never past the root. */
function walk(rootReal: string, parts: string[], raw: string, request: OpenRequest, hidden: Stats[]): Opened {
  const stack: number[] = [openRoot(rootReal)];
  const names: string[] = [];
  const todo = parts.filter((p) => p !== "" && p !== ".");
  const dataFolder = () => new ToolError(`"${raw}" is inside pincer's own data folder, which tools never touch.`);
  const outside = () =>
    new ToolError(`"${raw}" leads outside the workspace through a symlink; only files inside ${rootReal} can be used.`);
  let links = 0;
  try {
    while (todo.length > 0) {
      const name = todo.shift() as string;
      if (name === "..") {
        if (stack.length === 1) throw outside();
        closeSync(stack.pop() as number);
        names.pop();
        continue;
      }
      const last = todo.length === 0;
      const at = atPath(stack[stack.length - 1], name);
      const info = lstatSync(at, { throwIfNoEntry: false });
      if (info?.isSymbolicLink()) {
        if (++links > MAX_LINKS) throw new ToolError(`"${raw}" has too many levels of symlinks.`);
        if (request.noLinks || (last && request.exclusive))
          throw new ToolError(`"${raw}" is a symlink; it is left alone.`);
        let target = readlinkSync(at);
        if (isAbsolute(target)) {
          if (!isInside(rootReal, resolve(target))) throw outside();
          while (stack.length > 1) closeSync(stack.pop() as number);
          names.length = 0;
          target = relative(rootReal, resolve(target));
        }
        todo.unshift(...target.split("/").filter((p) => p !== "" && p !== "."));
        continue;
      }
      if (!last) {
        const fd = openDir(at, raw, info === undefined && request.create === true);
        stack.push(fd);
        names.push(name);
        if (isOneOf(hidden, fstatSync(fd))) throw dataFolder();
        if (stack.length > MAX_DEPTH) throw new ToolError(`"${raw}" is more than ${MAX_DEPTH} folders deep.`);
        continue;
      }
      const { fd, stats, created } = openLast(at, info, raw, request);
      if (isOneOf(hidden, stats)) {
        closeSync(fd);
        if (stats.isDirectory()) throw dataFolder();
        throw new ToolError(`"${raw}" is the owner's private memory, which this chat may not read.`);
      }
      return { fd, stats, path: [rootReal, ...names, name].join(sep), created };
    }
    // The path names a root itself (or `a/..`): hand over the folder we hold.
    if (request.want === "file") throw new ToolError(`"${raw}" is a folder, not a file.`);
    const fd = stack.pop() as number;
    return { fd, stats: fstatSync(fd), path: [rootReal, ...names].join(sep) || sep, created: false };
  } catch (err) {
    throw errnoError(err, raw);
  } finally {
    for (const fd of stack) closeSync(fd);
  }
}

function openRoot(rootReal: string): number {
  const fd = openSync(rootReal, O_RDONLY | O_DIRECTORY);
  // Everything else goes through /proc/self/fd; fail with a clear reason where it is missing.
  if (lstatSync(`/proc/self/fd/${fd}`, { throwIfNoEntry: false })) return fd;
  closeSync(fd);
  throw new Error("pincer's file access needs Linux's /proc (mounted at /proc)");
}

/** Opens a folder below `at`'s parent without following a link; creates it first when asked. */
function openDir(at: string, raw: string, create: boolean): number {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return openSync(at, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ELOOP") throw new ToolError(`"${raw}" changed while it was opened (a folder became a symlink).`);
      if (code !== "ENOENT" || !create) throw err;
    }
    try {
      // mkdir never follows a symlink in the last component: a link there makes it fail with EEXIST.
      mkdirSync(at, 0o777);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
  }
  throw new ToolError(`"${raw}" keeps changing while it is opened; try again.`);
}

function openLast(at: string, info: Stats | undefined, raw: string, request: OpenRequest) {
  if (info && request.exclusive) throw new ToolError(`"${raw}" already exists.`);
  if (info && !info.isFile() && !info.isDirectory()) throw new ToolError(notRegular(raw, info));
  if (info?.isDirectory() && request.want === "file") throw new ToolError(`"${raw}" is a folder, not a file.`);
  if (info?.isFile() && request.want === "dir") throw new ToolError(`"${raw}" is a file, not a folder.`);
  if (!info && !(request.create && request.access === "write" && request.want === "file")) {
    throw new ToolError(`"${raw}" does not exist.`);
  }
  const write = request.access === "write" ? O_WRONLY | (info ? 0 : O_CREAT | O_EXCL) : O_RDONLY;
  const flags = info?.isDirectory() ? O_RDONLY | O_DIRECTORY : write;
  let fd: number;
  try {
    fd = openSync(at, flags | O_NOFOLLOW | O_NONBLOCK, 0o666);
  } catch (err) {
    if (["ELOOP", "EEXIST", "ENXIO", "ENOTDIR", "ENOENT"].includes(String((err as NodeJS.ErrnoException).code))) {
      // Swapped between the lstat and the open (or a FIFO without a reader): refuse, never guess.
      throw new ToolError(`"${raw}" changed while it was opened; try again.`);
    }
    throw err;
  }
  const stats = fstatSync(fd);
  if (!stats.isFile() && !(stats.isDirectory() && request.want !== "file")) {
    closeSync(fd);
    throw new ToolError(stats.isDirectory() ? `"${raw}" is a folder, not a file.` : notRegular(raw, stats));
  }
  return { fd, stats, created: (flags & O_CREAT) !== 0 };
}

function notRegular(raw: string, info: Stats): string {
  const device = info.isCharacterDevice() || info.isBlockDevice() ? "a device" : "not a regular file";
  const kind = info.isFIFO() ? "a named pipe (FIFO)" : info.isSocket() ? "a socket" : device;
  return `"${raw}" is ${kind}; only regular files can be read or written.`;
}

function errnoError(err: unknown, raw: string): Error {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === "ENOENT") return new ToolError(`"${raw}" does not exist.`);
  if (code === "EACCES" || code === "EPERM") return new ToolError(`"${raw}" cannot be accessed (permission denied).`);
  if (code === "ENOTDIR") return new ToolError(`"${raw}": a part of the path is a file, not a folder.`);
  if (code === "ELOOP") return new ToolError(`"${raw}" changed while it was opened; try again.`);
  return err as Error;
}
