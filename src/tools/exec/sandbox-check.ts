import { accessSync, constants, lstatSync, mkdtempSync, readlinkSync, realpathSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { execa } from "execa";
import type { Config } from "../../config/config.js";
import { buildBwrapArgs, type HostLayout, SYSTEM_PATHS, sandboxEnv } from "./bwrap-args.js";

export interface SandboxStatus {
  /** exec can run commands (sandboxed, or unsandboxed because the user chose PINCER_SANDBOX=none). */
  ok: boolean;
  sandboxed: boolean;
  /** One or two sentences for `pincer doctor` and the start-up log. */
  detail: string;
  /** Absolute path of the working bwrap, when sandboxed. */
  bwrap?: string;
}

export interface CheckOptions {
  /** Where to look for bwrap; the host's PATH by default. */
  searchPath?: string;
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
    try {
      const stat = lstatSync(path);
      if (stat.isSymbolicLink()) layout[path] = { type: "symlink", target: readlinkSync(path) };
      else layout[path] = { type: stat.isDirectory() ? "dir" : "file" };
    } catch {
      // Absent on this host: not bound.
    }
  }
  return layout;
}

/**
 * Whether exec works on this host: runs `sh -c 'echo ok'` in a sandbox built exactly like exec's
 * (with a throwaway workspace), so a pass here means commands will run.
 */
export async function checkSandbox(
  config: Pick<Config, "sandbox" | "home" | "exec">,
  options: CheckOptions = {},
): Promise<SandboxStatus> {
  if (config.sandbox === "none") return { ok: true, sandboxed: false, detail: UNSANDBOXED_WARNING };
  const bwrap = findExecutable("bwrap", options.searchPath ?? process.env.PATH ?? "/usr/bin:/bin");
  if (!bwrap) return { ok: false, sandboxed: false, detail: INSTALL_BWRAP };

  const workspace = realpathSync(mkdtempSync(join(tmpdir(), "pincer-sandbox-check-")));
  try {
    const args = buildBwrapArgs(
      inspectHost(),
      {
        workspace,
        workingDir: workspace,
        hidden: [config.home],
        network: config.exec.network,
        env: sandboxEnv(process.env, workspace, []),
      },
      ["sh", "-c", "echo ok"],
    );
    const result = await execa(bwrap, args, { reject: false, timeout: 15_000, stdin: "ignore", extendEnv: false });
    if (result.exitCode === 0 && result.stdout.trim() === "ok") {
      const version = await execa(bwrap, ["--version"], { reject: false, extendEnv: false });
      const network = config.exec.network ? "with network access (exec.network)" : "without network access";
      return {
        ok: true,
        sandboxed: true,
        bwrap,
        detail: `${version.stdout.trim() || "bubblewrap"} works: commands run sandboxed, ${network}.`,
      };
    }
    const said = (result.stderr || result.shortMessage || "no error message").trim().split("\n").slice(-3).join(" ");
    return {
      ok: false,
      sandboxed: false,
      detail: `bubblewrap is installed but cannot create a sandbox here (${said}), so exec refuses to run commands. ${NAMESPACE_HINT} As a last resort PINCER_SANDBOX=none runs commands without a sandbox.`,
    };
  } finally {
    rmSync(workspace, { recursive: true, force: true });
  }
}

/** The first executable file called `name` in a PATH-style list of folders. */
export function findExecutable(name: string, searchPath: string): string | undefined {
  for (const dir of searchPath.split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // Not here; keep looking.
    }
  }
  return undefined;
}
