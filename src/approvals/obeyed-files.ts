import type { Dirent } from "node:fs";
import { lstat, opendir, stat } from "node:fs/promises";
import { join, relative, resolve } from "node:path";
import { isInside } from "../tools/files/safe-open.js";

/** Files a command obeys besides its text: build and package files by name (a Makefile, package.json's scripts…), every
 * dotfile (`.npmrc`, a `.git` file…) and a repository's configuration and hooks; in its folder and each above it up to
 * the workspace, in folders it names, and the files it names itself (`./build.sh`, `python3 tool.py`). */
const BUILD_FILES = new Set([
  ..."Makefile makefile GNUmakefile justfile Justfile Taskfile.yml Taskfile.yaml Rakefile Gemfile".split(" "),
  ..."package.json pyproject.toml setup.py setup.cfg tox.ini noxfile.py conftest.py pytest.ini".split(" "),
  ..."Cargo.toml build.rs go.mod CMakeLists.txt meson.build build.gradle build.gradle.kts pom.xml".split(" "),
]);
/** What git obeys in `.git`: configuration (core.fsmonitor, core.pager, aliases, include.path…), hooks, attributes. */
const GIT_FILES = ["config", "config.worktree", "commondir", "info/attributes", "hooks"];
/** Bounds: a folder of thousands of files costs no more than this, and nor does a long command. */
const MAX_ENTRIES = 2000;
const MAX_WORDS = 64;
/** File times come from the kernel's coarse clock, up to a tick (1–10 ms) behind Date.now(): a change this close to the
 * grant counts as after it (asked once more, never missed). */
const CLOCK_SLACK_MS = 50;

/** The files (relative to the workspace) a command may obey that changed after `since` (ms), from a scan bounded in
 * entries and words. "Changed" is the inode's change time, which no write, rename or `touch -d` can leave old. */
export async function obeyedFilesChangedSince(
  workspace: string,
  workingDir: string | undefined,
  command: string,
  since: number,
): Promise<string[]> {
  const cwd = resolve(workspace, workingDir ?? ".");
  if (!isInside(workspace, cwd)) return [workingDir ?? "."];
  const folders = new Set<string>();
  for (let dir = cwd; isInside(workspace, dir); dir = resolve(dir, "..")) {
    folders.add(dir);
    if (dir === workspace) break;
  }
  const files = new Set<string>();
  for (const word of wordsOf(command)) {
    const path = resolve(cwd, word);
    if (!isInside(workspace, path) || path === workspace) continue;
    const stat = await lstat(path).catch(() => undefined);
    if (stat?.isDirectory()) folders.add(path);
    else if (stat) files.add(path);
  }
  for (const folder of folders) for (const file of await obeyedIn(folder)) files.add(file);
  const changed: string[] = [];
  for (const file of files) {
    // A link counts as changed when it or what it leads to changed.
    const stats = await Promise.all([lstat(file), stat(file)].map((p) => p.catch(() => undefined)));
    if (Math.max(...stats.map((s) => s?.ctimeMs ?? 0)) > since - CLOCK_SLACK_MS)
      changed.push(relative(workspace, file));
  }
  return changed.sort();
}

async function obeyedIn(folder: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await entriesOf(folder)) {
    const path = join(folder, entry.name);
    if (entry.name === ".git" && (entry.isDirectory() || entry.isSymbolicLink())) {
      if (entry.isSymbolicLink()) found.push(path);
      for (const name of GIT_FILES) found.push(join(path, name));
      for (const hook of await entriesOf(join(path, "hooks"))) found.push(join(path, "hooks", hook.name));
    } else if ((entry.name.startsWith(".") && !entry.isDirectory()) || BUILD_FILES.has(entry.name)) {
      found.push(path);
    }
  }
  return found;
}

/** A folder's first MAX_ENTRIES entries; none when it cannot be read. */
async function entriesOf(folder: string): Promise<Dirent[]> {
  const entries: Dirent[] = [];
  const dir = await opendir(folder).catch(() => undefined);
  for await (const entry of dir ?? []) {
    if (entries.length >= MAX_ENTRIES) break;
    entries.push(entry);
  }
  return entries;
}

/** The command's words that could name a file, unquoted (options and their `=` values too: `-f=x.mk`). */
function wordsOf(command: string): string[] {
  return command
    .split(/[\s;&|()<>`$]+/)
    .map((word) => word.replace(/['"\\]/g, "").replace(/^-[^=]*=/, ""))
    .filter((word) => word !== "" && !word.startsWith("-"))
    .slice(0, MAX_WORDS);
}
