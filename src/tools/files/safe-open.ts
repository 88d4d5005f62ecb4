/**
 * Race-free file access beneath a root folder.
 *
 * Why a descriptor walk and not a sandboxed file server: a sandboxed command runs at the same time
 * as file tools called from another chat and can swap any workspace folder for a symlink to the
 * host between a check and an open. Checking a path string and then opening it again can always
 * lose that race. Instead every path is walked one component at a time from a descriptor of the
 * root, like openat(2): each folder is opened with O_DIRECTORY|O_NOFOLLOW *relative to the
 * descriptor of its parent*, so a swapped-in symlink makes the open fail (ELOOP) instead of being
 * followed, and a folder renamed away keeps being the folder we hold. Node has no openat, so
 * "relative to a descriptor" is spelled `/proc/self/fd/<dirfd>/<name>`: the kernel resolves the fd
 * link to the very folder the descriptor holds (not to a path string), then `name` inside it, and
 * O_NOFOLLOW applies to `name`. Symlinks that stay inside the root are resolved by pincer itself
 * (readlink of the fd-relative name, then walked the same way), so a link can never lead out.
 * This keeps each call cheap (no process), needs only Linux's /proc (bwrap needs Linux anyway), and
 * also covers the prompt files and start-up, which run when no sandbox exists. A bwrap file server
 * would be just as safe but costs a long-lived process, a protocol and a restart path.
 *
 * Files are opened O_NONBLOCK so a FIFO never blocks (neither the event loop nor a libuv thread),
 * checked with lstat before the open (devices, sockets and FIFOs are never even opened) and with
 * fstat after it (what was opened is what is used).
 */
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readlinkSync,
  realpathSync,
  type Stats,
} from "node:fs";
import { isAbsolute, relative, resolve, sep } from "node:path";
import { ToolError } from "../tool.js";

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = constants;
const DIR_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;
/** Like Linux's own limit on symlinks followed in one lookup. */
const MAX_LINKS = 40;
/** Folders held open at once in one walk: a tree 10,000 deep must not use up pincer's descriptors. */
const MAX_DEPTH = 256;

/** Where file access may reach. Every root is walked from a descriptor; nothing outside is reachable. */
export interface PathScope {
  workspace: string;
  /** Extra folders that may be read but never written (the media folder with users' attachments). */
  readRoots?: string[];
  /**
   * What stays off-limits even inside the workspace, by identity (so no link or second name
   * reaches it): PINCER_HOME, and MEMORY.md for a conversation that may not see it.
   */
  hidden?: string[];
}

/** "edit": allowed only where writing is, but opened for reading (edit_file reads, then writes anew). */
export type Access = "read" | "write" | "edit";

export interface OpenRequest {
  access: Access;
  /** What the path must name: a regular file, a folder, or either. */
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

interface Root {
  /** The folder as configured and as its real path: both spellings of an absolute path are accepted. */
  paths: string[];
  real: string;
  writable: boolean;
}

/**
 * Opens what a model-given path (relative to the workspace, or absolute) names inside the scope,
 * or throws a ToolError that says why not. The caller owns `fd` and must close it.
 */
export function openInScope(input: string | undefined, scope: PathScope, request: OpenRequest): Opened {
  const raw = input?.trim() || ".";
  if (raw === "~" || raw.startsWith("~/")) {
    throw new ToolError(`"${raw}": ~ is not expanded; paths are relative to the workspace, so drop the "~/".`);
  }
  const workspace = rootOf(scope.workspace, true);
  if (!workspace) throw new ToolError(`the workspace ${scope.workspace} does not exist.`);
  const roots = [workspace, ...(scope.readRoots ?? []).flatMap((p) => rootOf(p, false) ?? [])];
  const candidate = isAbsolute(raw) ? resolve(raw) : resolve(workspace.real, raw);

  // The deepest root holding the path lexically; `..` was already resolved by `resolve`.
  let root: Root | undefined;
  let rest = "";
  for (const r of roots) {
    for (const p of r.paths) {
      if (!isInside(p, candidate)) continue;
      if (!root || p.length >= (root.paths.find((q) => isInside(q, candidate)) ?? "").length) {
        root = r;
        rest = relative(p, candidate);
      }
    }
  }
  if (!root) {
    throw new ToolError(
      `"${raw}" leads outside the workspace; only files inside ${workspace.real} can be used (relative paths start there).`,
    );
  }
  if (request.access !== "read" && !root.writable) {
    throw new ToolError(`"${raw}" is in the read-only media folder; write inside the workspace instead.`);
  }
  return walk(root.real, rest === "" ? [] : rest.split(sep), raw, request, hiddenBelow(scope, root.real));
}

/**
 * The hidden folders (PINCER_HOME) that a walk from `rootReal` could reach, by identity. The
 * workspace normally lives inside PINCER_HOME: a hidden folder that holds the root is not hidden from it.
 */
export function hiddenBelow(scope: PathScope, rootReal: string): Stats[] {
  return (scope.hidden ?? []).flatMap((p) => {
    const real = realOr(p, p);
    if (isInside(real, rootReal)) return [];
    const s = statOrUndefined(real);
    return s ? [s] : [];
  });
}

function rootOf(path: string, writable: boolean): Root | undefined {
  const configured = resolve(path);
  const real = realOr(configured, undefined);
  return real === undefined ? undefined : { paths: [...new Set([configured, real])], real, writable };
}

function realOr<T>(path: string, fallback: T): string | T {
  try {
    return realpathSync(path);
  } catch {
    return fallback;
  }
}

function statOrUndefined(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}

/**
 * The walk itself. `stack` holds the descriptors of the folders from the root down to the current
 * one, so `..` inside a symlink's target pops back up without a path lookup, and never past the root.
 */
function walk(rootReal: string, parts: string[], raw: string, request: OpenRequest, hidden: Stats[]): Opened {
  const stack: number[] = [openRoot(rootReal)];
  const names: string[] = [];
  const todo = parts.filter((p) => p !== "" && p !== ".");
  let links = 0;
  let created = false;
  const outside = () =>
    new ToolError(`"${raw}" leads outside the workspace through a symlink; only files inside ${rootReal} can be used.`);
  try {
    while (todo.length > 0) {
      const name = todo.shift() as string;
      const dirFd = stack[stack.length - 1];
      if (name === "..") {
        if (stack.length === 1) throw outside();
        closeSync(stack.pop() as number);
        names.pop();
        continue;
      }
      const last = todo.length === 0;
      const at = atPath(dirFd, name);
      const info = lstatOrUndefined(at, raw);
      if (info?.isSymbolicLink()) {
        if (++links > MAX_LINKS) throw new ToolError(`"${raw}" has too many levels of symlinks.`);
        if (request.noLinks || (last && request.exclusive)) {
          throw new ToolError(`"${raw}" is a symlink; it is left alone.`);
        }
        const target = readlinkSync(at);
        if (isAbsolute(target)) {
          const within = resolve(target);
          if (!isInside(rootReal, within)) throw outside();
          while (stack.length > 1) closeSync(stack.pop() as number);
          names.length = 0;
          todo.unshift(...relative(rootReal, within).split(sep).filter(Boolean));
        } else {
          todo.unshift(...target.split("/").filter((p) => p !== "" && p !== "."));
        }
        continue;
      }
      if (!last) {
        const fd = openDir(at, raw, info === undefined && request.create === true);
        if (fd === undefined) throw new ToolError(`"${raw}" does not exist.`);
        if (hidden.some((h) => sameFile(h, fstatSync(fd)))) {
          closeSync(fd);
          throw new ToolError(`"${raw}" is inside pincer's own data folder, which tools never touch.`);
        }
        stack.push(fd);
        names.push(name);
        if (stack.length > MAX_DEPTH) throw new ToolError(`"${raw}" is more than ${MAX_DEPTH} folders deep.`);
        continue;
      }
      const opened = openLast(at, info, raw, request);
      created = opened.created;
      names.push(name);
      const stats = fstatSync(opened.fd);
      if (hidden.some((h) => sameFile(h, stats))) {
        closeSync(opened.fd);
        throw new ToolError(
          stats.isDirectory()
            ? `"${raw}" is inside pincer's own data folder, which tools never touch.`
            : `"${raw}" is the owner's private memory, which this chat may not read.`,
        );
      }
      return { fd: opened.fd, stats, path: [rootReal, ...names].join(sep), created };
    }
    // The path names a root itself (or `a/..`): hand over the folder we hold.
    const fd = stack.pop() as number;
    const stats = fstatSync(fd);
    if (request.want === "file") {
      closeSync(fd);
      throw new ToolError(`"${raw}" is a folder, not a file.`);
    }
    return { fd, stats, path: [rootReal, ...names].join(sep) || sep, created: false };
  } finally {
    for (const fd of stack) closeSync(fd);
  }
}

function openRoot(rootReal: string): number {
  try {
    const fd = openSync(rootReal, O_RDONLY | O_DIRECTORY);
    // Everything else goes through /proc/self/fd; fail with a clear reason where it is missing.
    lstatSync(`/proc/self/fd/${fd}`);
    return fd;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT" && !statOrUndefined("/proc/self/fd")) {
      throw new Error("pincer's file access needs Linux's /proc (mounted at /proc)");
    }
    throw err;
  }
}

function lstatOrUndefined(at: string, raw: string): Stats | undefined {
  try {
    return lstatSync(at);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return undefined;
    throw errnoError(err, raw);
  }
}

/** Opens a folder below `at`'s parent without following a link; creates it first when asked. */
function openDir(at: string, raw: string, create: boolean): number | undefined {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return openSync(at, DIR_FLAGS);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ELOOP") throw new ToolError(`"${raw}" changed while it was opened (a folder became a symlink).`);
      if (code !== "ENOENT" || !create) {
        if (code === "ENOENT") return undefined;
        throw errnoError(err, raw);
      }
    }
    try {
      // mkdir never follows a symlink in the last component: a link there makes it fail with EEXIST.
      mkdirSync(at, 0o777);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw errnoError(err, raw);
    }
  }
  throw new ToolError(`"${raw}" keeps changing while it is opened; try again.`);
}

function openLast(
  at: string,
  info: Stats | undefined,
  raw: string,
  request: OpenRequest,
): { fd: number; created: boolean } {
  if (info) {
    if (request.exclusive) throw new ToolError(`"${raw}" already exists.`);
    if (!info.isFile() && !info.isDirectory()) throw new ToolError(notRegular(raw, info));
    if (info.isDirectory() && request.want === "file") throw new ToolError(`"${raw}" is a folder, not a file.`);
    if (info.isFile() && request.want === "dir") throw new ToolError(`"${raw}" is a file, not a folder.`);
  } else if (!(request.create && request.access === "write" && request.want === "file")) {
    throw new ToolError(`"${raw}" does not exist.`);
  }
  const base = O_NOFOLLOW | O_NONBLOCK;
  let flags: number;
  let created = false;
  if (info?.isDirectory()) flags = O_RDONLY | O_DIRECTORY | base;
  else if (request.access === "write") flags = O_WRONLY | base | (info ? 0 : O_CREAT | O_EXCL);
  else flags = O_RDONLY | base;
  let fd: number;
  try {
    fd = openSync(at, flags, 0o666);
    created = (flags & O_CREAT) !== 0;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ELOOP" || code === "EEXIST" || code === "ENXIO" || code === "ENOTDIR" || code === "ENOENT") {
      // Swapped between the lstat and the open (or a FIFO without a reader): refuse, never guess.
      throw new ToolError(`"${raw}" changed while it was opened; try again.`);
    }
    throw errnoError(err, raw);
  }
  const stats = fstatSync(fd);
  const ok = stats.isFile() || (stats.isDirectory() && request.want !== "file");
  if (!ok) {
    closeSync(fd);
    throw new ToolError(stats.isDirectory() ? `"${raw}" is a folder, not a file.` : notRegular(raw, stats));
  }
  return { fd, created };
}

function notRegular(raw: string, info: Stats): string {
  const kind = info.isFIFO()
    ? "a named pipe (FIFO)"
    : info.isSocket()
      ? "a socket"
      : info.isCharacterDevice() || info.isBlockDevice()
        ? "a device"
        : "not a regular file";
  return `"${raw}" is ${kind}; only regular files can be read or written.`;
}

function sameFile(a: Stats, b: Stats): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

function errnoError(err: unknown, raw: string): Error {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === "ENOENT") return new ToolError(`"${raw}" does not exist.`);
  if (code === "EACCES" || code === "EPERM") return new ToolError(`"${raw}" cannot be accessed (permission denied).`);
  if (code === "ENOTDIR") return new ToolError(`"${raw}": a part of the path is a file, not a folder.`);
  if (code === "ELOOP") return new ToolError(`"${raw}" changed while it was opened; try again.`);
  return err as Error;
}
