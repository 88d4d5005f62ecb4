import { copyFileSync, existsSync, mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { mediaDir, packageRoot } from "../paths.js";

export interface HomeLayout {
  home: string;
  workspace: string;
}

/**
 * Creates PINCER_HOME, the media folder and the workspace, copying the template files that are
 * missing. Never overwrites: the user's edits to AGENTS.md and friends are theirs. Returns the
 * files it created.
 */
export function ensureHome({ home, workspace }: HomeLayout): string[] {
  mkdirSync(home, { recursive: true, mode: 0o700 });
  mkdirSync(mediaDir(home), { recursive: true });
  return copyMissing(join(packageRoot(), "workspace"), workspace);
}

export function copyMissing(from: string, to: string): string[] {
  mkdirSync(to, { recursive: true });
  const created: string[] = [];
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const source = join(from, entry.name);
    const target = join(to, entry.name);
    if (entry.isDirectory()) created.push(...copyMissing(source, target));
    else if (!existsSync(target)) {
      copyFileSync(source, target);
      created.push(target);
    }
  }
  return created;
}
