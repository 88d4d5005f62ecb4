import { execFileSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { packageRoot } from "../../src/paths.js";

/**
 * Vitest's global setup: many tests start the built daemon from `dist/`, so `npx vitest run FILE` right after an edit
 * would quietly test the old code. Rebuilds first when a source file is newer than its built module (or has none).
 */
export default function freshDist(): void {
  const root = packageRoot();
  const stale = sources(root).filter((file) => {
    const built = join(root, "dist", relative(root, file).replace(/\.ts$/, ".js"));
    return mtime(built) < mtime(file);
  });
  if (stale.length === 0) return;
  console.log(
    `dist/ is older than ${relative(root, stale[0])}${stale.length > 1 ? ` and ${stale.length - 1} more` : ""}: building it first`,
  );
  execFileSync("npm", ["run", "--silent", "build"], { cwd: root, stdio: "inherit" });
}

function sources(root: string): string[] {
  return ["src", "channels"].flatMap((top) =>
    readdirSync(join(root, top), { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile() && e.name.endsWith(".ts") && !e.name.endsWith(".test.ts"))
      .map((e) => join(e.parentPath, e.name)),
  );
}

function mtime(path: string): number {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return 0;
  }
}
