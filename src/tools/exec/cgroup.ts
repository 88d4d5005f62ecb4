import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { attempt } from "../../attempt.js";

// A pids cgroup per command where the host allows one (root, or a delegated v2 subtree): the kernel exempts real
// root from RLIMIT_NPROC (prlimit, the process limit everywhere else), so under root only a cgroup stops a fork bomb.

/** The pids cgroup folder pincer itself is in: v1's pids hierarchy or v2's unified one. */
export function ownPidsCgroup(procSelfCgroup: string, fsRoot = "/sys/fs/cgroup"): string | undefined {
  for (const line of procSelfCgroup.split("\n")) {
    const [, controllers, path] = line.split(":");
    if (path !== undefined && controllers.split(",").includes("pids")) return join(fsRoot, "pids", path);
  }
  const unified = procSelfCgroup.split("\n").find((line) => line.startsWith("0::"));
  if (unified && existsSync(join(fsRoot, "cgroup.controllers"))) {
    const dir = join(fsRoot, unified.slice(3));
    // Children get a pids.max only where pids is enabled for the subtree (delegated to us).
    if (readOr(join(dir, "cgroup.subtree_control")).split(/\s+/).includes("pids")) return dir;
  }
}

const readOr = (path: string): string => attempt(() => readFileSync(path, "utf8"), "");

/** Creates `parent/name` with pids.max; undefined when the host does not allow it. */
export function createPidsCgroup(parent: string, name: string, maxPids: number): string | undefined {
  const dir = join(parent, name);
  // Not made here (a name taken, a host that refuses): never removed by pincer either.
  if (attempt(() => mkdirSync(dir), "failed") === "failed") return undefined;
  if (attempt(() => writeFileSync(join(dir, "pids.max"), String(maxPids)), "failed") !== "failed") return dir;
  removePidsCgroup(dir);
}

/** Removes a command's cgroup once its processes are gone; true when it is gone. */
export function removePidsCgroup(dir: string): boolean {
  try {
    rmdirSync(dir);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "ENOENT";
  }
}

/** A writable pids cgroup, tried for real: make a child, set its pids.max, remove it. */
export function writablePidsCgroup(): string | undefined {
  const parent = ownPidsCgroup(readOr("/proc/self/cgroup"));
  const dir = parent && createPidsCgroup(parent, `pincer-probe-${process.pid}`, 1);
  if (!dir) return undefined;
  removePidsCgroup(dir);
  return parent;
}

/** Waits (briefly) for the sandbox's last processes to be reaped, then removes the cgroup. */
export async function removeWhenEmpty(dir: string, timeoutMs = 3000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!removePidsCgroup(dir)) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return true;
}

/** A shell moves itself into the cgroup, then execs the command: every process it forks is counted from the start. */
export function inCgroup(dir: string, file: string, args: string[]): { file: string; args: string[] } {
  return { file: "/bin/sh", args: ["-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', dir, file, ...args] };
}
