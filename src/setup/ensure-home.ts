import { closeSync, constants, copyFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "pino";
import { mediaDir, packageRoot } from "../paths.js";
import { openInScope } from "../tools/files/safe-open.js";

/** Creates PINCER_HOME, the media folder and the workspace with the template files it lacks; returns the files
 * created. Never overwrites: the user's edits to AGENTS.md and friends are theirs. */
export function ensureHome({ home, workspace }: { home: string; workspace: string }, log?: Pick<Logger, "warn">) {
  mkdirSync(home, { recursive: true, mode: 0o700 });
  mkdirSync(mediaDir(home), { recursive: true });
  mkdirSync(workspace, { recursive: true });
  return copyMissing(join(packageRoot(), "workspace"), workspace, log);
}

/** The workspace is the sandbox's to change, so each file is created exclusively (O_EXCL, walked without following
 * links, see safe-open.ts): whatever has the name, even a dangling symlink to config.json, is left alone. */
function copyMissing(from: string, to: string, log?: Pick<Logger, "warn">, rel = ""): string[] {
  const created: string[] = [];
  for (const entry of readdirSync(join(from, rel), { withFileTypes: true })) {
    const path = join(rel, entry.name);
    if (entry.isDirectory()) {
      created.push(...copyMissing(from, to, log, path));
      continue;
    }
    let opened: ReturnType<typeof openInScope>;
    try {
      opened = openInScope(path, { workspace: to }, { access: "write", want: "file", create: true, exclusive: true });
    } catch (err) {
      const reason = (err as Error).message;
      if (!/already exists/.test(reason)) log?.warn({ file: join(to, path), reason }, "template file not created");
      continue;
    }
    try {
      writeFileSync(opened.fd, readFileSync(join(from, path)));
    } finally {
      closeSync(opened.fd);
    }
    created.push(opened.path);
  }
  return created;
}

/** Copies a file only when nothing (not even a dangling symlink) has its name: O_EXCL underneath. */
export function copyIfAbsent(source: string, target: string): boolean {
  try {
    copyFileSync(source, target, constants.COPYFILE_EXCL);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw err;
  }
}
