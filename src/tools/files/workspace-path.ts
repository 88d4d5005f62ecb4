import { lstat, realpath } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, relative, resolve } from "node:path";
import { ToolError } from "../tool.js";

/** Where file tools may act. Every path is checked after symlinks are resolved, not before. */
export interface PathScope {
  workspace: string;
  /** Extra folders that may be read but never written (the media folder with users' attachments). */
  readRoots?: string[];
  /** Folders that stay off-limits even when they sit inside the workspace (PINCER_HOME). */
  hidden?: string[];
}

export type Access = "read" | "write";

export function isInside(parent: string, child: string): boolean {
  const rel = relative(parent, child);
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

/**
 * Resolves a path the model gave (relative to the workspace, or absolute) to a real path inside
 * the workspace, or throws a ToolError that says why not. The returned path is what the tool
 * must use, so a symlink cannot point elsewhere between the check and the use.
 */
export async function resolveInWorkspace(input: string | undefined, scope: PathScope, access: Access): Promise<string> {
  const raw = input?.trim() || ".";
  if (raw === "~" || raw.startsWith("~/")) {
    throw new ToolError(`"${raw}": ~ is not expanded; paths are relative to the workspace, so drop the "~/".`);
  }
  const workspace = await realpath(scope.workspace);
  const candidate = isAbsolute(raw) ? resolve(raw) : resolve(workspace, raw);
  const real = await realpathAllowingMissing(candidate, raw);

  const roots = [workspace];
  if (access === "read") roots.push(...(await existingRealPaths(scope.readRoots ?? [])));
  if (!roots.some((root) => isInside(root, real))) {
    const how = isInside(workspace, candidate) ? " through a symlink" : "";
    const readOnly = access === "write" && roots.length === 1 && scope.readRoots?.some((r) => isInside(r, candidate));
    throw new ToolError(
      readOnly
        ? `"${raw}" is in the read-only media folder; write inside the workspace instead.`
        : `"${raw}" leads outside the workspace${how}; only files inside ${workspace} can be used (relative paths start there).`,
    );
  }
  // The workspace normally lives inside PINCER_HOME: a root nested in a hidden folder is a sanctioned
  // part of it. A hidden folder nested in a root (PINCER_HOME inside the workspace) stays hidden.
  for (const hidden of await existingRealPaths(scope.hidden ?? [])) {
    if (!isInside(hidden, real)) continue;
    const sanctioned = roots.some((root) => root !== hidden && isInside(hidden, root) && isInside(root, real));
    if (!sanctioned) throw new ToolError(`"${raw}" is inside pincer's own data folder, which tools never touch.`);
  }
  return real;
}

/** realpath for a path that may not exist yet: resolves the deepest existing ancestor. */
async function realpathAllowingMissing(path: string, raw: string): Promise<string> {
  try {
    return await realpath(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOTDIR") throw new ToolError(`"${raw}": a part of the path is a file, not a folder.`);
    if (code !== "ENOENT") throw err;
  }
  const exists = await lstat(path).then(
    () => true,
    () => false,
  );
  // It exists but realpath failed: a symlink whose target is missing. Where it points is unknowable
  // until something creates the target, so refuse rather than guess.
  if (exists) throw new ToolError(`"${raw}" is a symlink to something that does not exist.`);
  const parent = dirname(path);
  if (parent === path) return path;
  return join(await realpathAllowingMissing(parent, raw), basename(path));
}

async function existingRealPaths(paths: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const path of paths) {
    try {
      out.push(await realpath(path));
    } catch {
      // A folder that does not exist yet holds nothing to allow or hide.
    }
  }
  return out;
}

/** The path as the model should see it: relative to the workspace when inside it. */
export function displayPath(real: string, workspaceReal: string): string {
  if (!isInside(workspaceReal, real)) return real;
  return relative(workspaceReal, real) || ".";
}

/** The scope every file tool works in: the workspace, the media folder to read, PINCER_HOME hidden. */
export function fileScope(workspace: string, home: string, media: string): PathScope {
  return { workspace, readRoots: [media], hidden: [home] };
}
