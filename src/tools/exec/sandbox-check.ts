import { accessSync, constants, lstatSync, mkdtempSync, readlinkSync, realpathSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { attempt } from "../../attempt.js";
import type { Config } from "../../config/config.js";
import {
  buildBwrapArgs,
  type HostLayout,
  SANDBOX_HOME,
  type SandboxSpec,
  SYSTEM_PATHS,
  sandboxEnv,
} from "./bwrap-args.js";
import { writablePidsCgroup } from "./cgroup.js";

export interface SandboxStatus {
  /** exec can run commands (sandboxed, or not because the user chose PINCER_SANDBOX=none). */
  ok: boolean;
  sandboxed: boolean;
  /** For `pincer doctor` and the start-up log. */
  detail: string;
  bwrap?: string;
  /** What this host's sandbox can enforce beyond the mounts, found by trying each. */
  features?: SandboxFeatures;
}

export interface SandboxFeatures {
  /** bwrap 0.8+ on a kernel that lets it forbid nested user namespaces. */
  disableUserns: boolean;
  /** util-linux's prlimit, in a system folder the sandbox sees. */
  prlimit?: string;
  /** A pids cgroup pincer may create children in. */
  pidsCgroup?: string;
}

export const INSTALL_BWRAP =
  "bubblewrap (bwrap) is not installed, so exec cannot sandbox commands and refuses to run them: install it " +
  "(Debian/Ubuntu: sudo apt install bubblewrap; Fedora: sudo dnf install bubblewrap; Arch: sudo pacman -S bubblewrap; " +
  "Alpine: sudo apk add bubblewrap), or set PINCER_SANDBOX=none to run commands without a sandbox (not recommended).";

export const UNSANDBOXED_WARNING =
  "PINCER_SANDBOX=none: exec runs commands directly on this host with pincer's own permissions; only the " +
  "environment is cleaned. Anything that can talk to the bot can read and change what this user can. Remove " +
  "PINCER_SANDBOX once bubblewrap works (pincer doctor checks it).";

const NAMESPACE_HINT =
  "This usually means unprivileged user namespaces are blocked: on Ubuntu 23.10+ allow them for bwrap " +
  "(an AppArmor profile, or sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0); on older kernels " +
  "sudo sysctl kernel.unprivileged_userns_clone=1; inside Docker run the container with " +
  "--security-opt seccomp=unconfined --security-opt apparmor=unconfined.";

/** Describes how the system paths the sandbox binds exist on this host (lstat, so links stay links). */
export function inspectHost(paths: readonly string[] = SYSTEM_PATHS): HostLayout {
  const layout: HostLayout = {};
  for (const path of paths) {
    const stat = attempt(() => lstatSync(path));
    if (stat?.isSymbolicLink())
      layout[path] = attempt(() => ({ type: "symlink", target: readlinkSync(path) }) as const);
    else if (stat) layout[path] = { type: stat.isDirectory() ? "dir" : "file" };
  }
  return layout;
}

/** Runs `sh -c 'echo ok'` in a sandbox built exactly like exec's (a throwaway workspace): a pass means commands run. */
export async function checkSandbox(config: Pick<Config, "sandbox" | "home" | "exec">): Promise<SandboxStatus> {
  if (config.sandbox === "none") return { ok: true, sandboxed: false, detail: UNSANDBOXED_WARNING };
  const bwrap = findExecutable("bwrap", process.env.PATH ?? "/usr/bin:/bin");
  if (!bwrap) return { ok: false, sandboxed: false, detail: INSTALL_BWRAP };
  const { execa } = await import("execa");
  const run = (args: string[]) =>
    execa(bwrap, args, { reject: false, timeout: 15_000, stdin: "ignore", extendEnv: false });
  const workspace = realpathSync(mkdtempSync(join(tmpdir(), "pincer-sandbox-check-")));
  try {
    const help = await run(["--help"]);
    const wanted: SandboxFeatures = {
      disableUserns: `${help.stdout}${help.stderr}`.includes("--disable-userns"),
      prlimit: findExecutable("prlimit", "/usr/bin:/bin:/usr/sbin:/sbin"),
    };
    const env = sandboxEnv(process.env, SANDBOX_HOME, []);
    const spec = { workspace, workingDir: workspace, hidden: [config.home], network: config.exec.network, env };
    let said = "";
    // Each extra is dropped in turn if the host refuses it, so exec keeps working with what it can enforce.
    for (const features of [wanted, { ...wanted, disableUserns: false }, { disableUserns: false }]) {
      const result = await run(sandboxArgs(features, config.exec, spec, ["sh", "-c", "echo ok"]));
      if (result.exitCode === 0 && result.stdout.trim() === "ok") {
        features.pidsCgroup = writablePidsCgroup();
        const version = (await run(["--version"])).stdout.trim() || "bubblewrap";
        const network = config.exec.network ? "with network access (exec.network)" : "without network access";
        return {
          ok: true,
          sandboxed: true,
          bwrap,
          features,
          detail: `${version} works: commands run sandboxed, ${network}.`,
        };
      }
      said = (result.stderr || result.shortMessage || "no error message").trim().split("\n").slice(-3).join(" ");
    }
    return {
      ok: false,
      sandboxed: false,
      detail: `bubblewrap is installed but cannot create a sandbox here (${said}), so exec refuses to run commands. ${NAMESPACE_HINT} As a last resort PINCER_SANDBOX=none runs commands without a sandbox.`,
    };
  } finally {
    rmSync(workspace, { recursive: true, force: true });
  }
}

/** The bwrap arguments for `command` with what this host enforces and the configured limits (0 = off). */
export function sandboxArgs(features: SandboxFeatures, exec: Config["exec"], spec: SandboxSpec, command: string[]) {
  const { prlimit, disableUserns } = features;
  const limits = prlimit ? { prlimit, ...exec } : undefined;
  return buildBwrapArgs(inspectHost(), { ...spec, disableUserns, limits }, command);
}

/** `pincer doctor`'s line on the per-command limits: which are active on this host, and how. */
export function describeLimits(
  status: SandboxStatus,
  exec: Pick<Config["exec"], "maxProcesses" | "maxFileSizeMB" | "maxMemoryMB">,
  uid = process.getuid?.() ?? -1,
): { status: "ok" | "warn"; detail: string } {
  const f = status.sandboxed ? status.features : undefined;
  if (!f) return { status: "warn", detail: "none: commands do not run in a sandbox" };
  const limit = (value: number, name: string, enforced: string) =>
    value === 0
      ? `${name}: off (0 in the config)`
      : f.prlimit
        ? enforced
        : `${name}: NOT enforced (prlimit from util-linux is missing)`;
  const processes = f.pidsCgroup
    ? `processes: at most ${exec.maxProcesses} (pids cgroup and RLIMIT_NPROC)`
    : uid === 0
      ? "processes: NOT enforced (pincer runs as root, which the kernel exempts from RLIMIT_NPROC, and no pids cgroup is writable)"
      : `processes: at most ${exec.maxProcesses} (RLIMIT_NPROC)`;
  const parts = [
    limit(exec.maxProcesses, "processes", processes),
    limit(exec.maxFileSizeMB, "file size", `file size: at most ${exec.maxFileSizeMB} MB (RLIMIT_FSIZE)`),
    limit(exec.maxMemoryMB, "memory", `memory: at most ${exec.maxMemoryMB} MB per process (RLIMIT_DATA)`),
    f.disableUserns
      ? "nested user namespaces: forbidden (--disable-userns)"
      : "nested user namespaces: allowed (this bubblewrap lacks --disable-userns; 0.8 or newer has it)",
  ];
  const weak = !f.disableUserns || parts.some((part) => part.includes("NOT enforced"));
  return { status: weak ? "warn" : "ok", detail: parts.join("; ") };
}

export function findExecutable(name: string, searchPath: string): string | undefined {
  for (const dir of searchPath.split(delimiter)) {
    const candidate = join(dir, name);
    const found = attempt(() => {
      accessSync(candidate, constants.X_OK);
      return statSync(candidate).isFile();
    });
    if (dir && found) return candidate;
  }
}
