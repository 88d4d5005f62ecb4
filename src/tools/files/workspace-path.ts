import { realpathSync } from "node:fs";
import { relative } from "node:path";
import { isInside, type PathScope } from "./safe-open.js";

export { isInside, type PathScope } from "./safe-open.js";

/** The path as the model should see it: relative to the workspace when inside it. */
export function displayPath(real: string, workspaceReal: string): string {
  if (!isInside(workspaceReal, real)) return real;
  return relative(workspaceReal, real) || ".";
}

/** displayPath against the workspace as configured (resolved to its real path). */
export function workspaceDisplay(real: string, workspace: string): string {
  let workspaceReal = workspace;
  try {
    workspaceReal = realpathSync(workspace);
  } catch {
    // Shown as is.
  }
  return displayPath(real, workspaceReal);
}

/** The scope every file tool works in: the workspace, the media folder to read, PINCER_HOME hidden. */
export function fileScope(workspace: string, home: string, media: string): PathScope {
  return { workspace, readRoots: [media], hidden: [home] };
}
