import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The folder holding package.json, whether running from src/ (tests) or dist/src/ (installed). */
export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, "package.json"))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error("package.json not found above src/");
    dir = parent;
  }
  return dir;
}

export function databasePath(home: string): string {
  return join(home, "pincer.db");
}

/** The store of this configuration: PostgreSQL with PINCER_DATABASE_URL, else the SQLite file in PINCER_HOME. */
export function storeLocation(config: { home: string; databaseUrl?: string }): { path: string; url?: string } {
  return { path: databasePath(config.home), url: config.databaseUrl };
}

/** The model endpoints' context windows, as learned from the servers (see llm/context-limits.ts). */
export function contextLimitsPath(home: string): string {
  return join(home, "context-windows.json");
}

export function mediaDir(home: string): string {
  return join(home, "media");
}

/** Where skills live (`dir` below `root`): the bundled ones, then the workspace's, which override them by name. */
export function skillDirs(workspace: string): Array<{ root: string; dir: string }> {
  return [
    { root: packageRoot(), dir: "skills" },
    { root: workspace, dir: "skills" },
  ];
}
