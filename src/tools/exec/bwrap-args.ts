import type { Config } from "../../config/config.js";
import { isInside } from "../files/safe-open.js";

/** How a system path exists on the host: data, so the argument list stays pure. */
export type HostEntry = { type: "dir" } | { type: "file" } | { type: "symlink"; target: string };
export type HostLayout = Record<string, HostEntry | undefined>;

/** Top-level merged-/usr links (/bin -> usr/bin) are recreated as links rather than bound. */
const TOP_LEVEL_LINKS = new Set(["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"]);

/** What the sandbox sees of the host, read-only; the rest (homes, /opt, PINCER_HOME with its .env) is never mounted. */
export const SYSTEM_PATHS = [
  "/usr",
  ...TOP_LEVEL_LINKS,
  ...["alternatives", "ssl", "ca-certificates", "pki", "resolv.conf", "hosts", "nsswitch.conf", "localtime"],
  ...["ld.so.cache", "ld.so.conf", "ld.so.conf.d", "mime.types"],
  // Without a passwd entry for the uid, git, ssh and pip fail in confusing ways; it holds no secrets.
  ...["passwd", "group"],
].map((path) => (path.startsWith("/") ? path : `/etc/${path}`));

export const SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** pincer's own credentials never enter a sandbox, even when someone lists them in exec.envAllowlist. */
export const NEVER_PASSED = new Set(["OPENAI_API_KEY", "TELEGRAM_BOT_TOKEN", "DISCORD_BOT_TOKEN"]);

/** HOME in the sandbox: its fresh /tmp, never the workspace, where the file tools could leave a `.gitconfig` or
 * `.bashrc` for the next command to obey. */
export const SANDBOX_HOME = "/tmp";

/** Paths are real paths. */
export interface SandboxSpec {
  /** Mounted read-write. */
  workspace: string;
  /** Inside the workspace. */
  workingDir: string;
  /** The conversation's own media folder, mounted read-only when present. */
  media?: string;
  /** Folders outside the workspace a person's space reaches (`shared/`, skills): bound read-write or read-only. */
  shared?: { read: string[]; write: string[] };
  /** Files in the workspace shown empty (MEMORY.md for a chat that may not see it). */
  masked?: string[];
  /** Invisible even inside a mounted folder (PINCER_HOME). */
  hidden: string[];
  network: boolean;
  env: Record<string, string>;
  /** Forbid user namespaces inside the sandbox (`unshare -r`): bwrap 0.8+ only, hence a flag. */
  disableUserns?: boolean;
  /** Set with prlimit inside the sandbox; absent or 0 means unlimited. */
  limits?: SandboxLimits;
}

/** util-linux's prlimit (visible inside the sandbox: it lives in /usr/bin) and exec's limits. */
export interface SandboxLimits extends Pick<Config["exec"], "maxProcesses" | "maxFileSizeMB" | "maxMemoryMB"> {
  prlimit: string;
}

const MB = 1024 * 1024;

/** The prlimit prefix, hard and soft limits alike so the command cannot raise them: RLIMIT_NPROC (processes and
 * threads of the sandbox's user), RLIMIT_FSIZE, RLIMIT_DATA (private writable memory per process). */
export function limitArgs(limits: SandboxLimits): string[] {
  const args: string[] = [];
  if (limits.maxProcesses > 0) args.push(`--nproc=${limits.maxProcesses}`);
  if (limits.maxFileSizeMB > 0) args.push(`--fsize=${limits.maxFileSizeMB * MB}`);
  if (limits.maxMemoryMB > 0) args.push(`--data=${limits.maxMemoryMB * MB}`);
  return args.length > 0 ? [limits.prlimit, ...args, "--"] : [];
}

/** The bubblewrap arguments for one exec call. Later mounts stack on earlier ones, so the order is: system, fresh
 * /proc /dev /tmp, workspace and media, empty tmpfs over hidden folders, re-mounts of what lives inside those. */
export function buildBwrapArgs(host: HostLayout, spec: SandboxSpec, command: string[]): string[] {
  if (!isInside(spec.workspace, spec.workingDir)) {
    throw new Error(`working directory ${spec.workingDir} is outside the workspace ${spec.workspace}`);
  }
  if (spec.hidden.includes(spec.workspace)) {
    throw new Error(
      `the workspace ${spec.workspace} is PINCER_HOME itself; point PINCER_WORKSPACE to a folder of its own`,
    );
  }
  const args: string[] = [];
  const visibleSources: string[] = [];
  for (const path of SYSTEM_PATHS) {
    const entry = host[path];
    if (!entry) continue;
    if (entry.type === "symlink" && TOP_LEVEL_LINKS.has(path)) {
      args.push("--symlink", entry.target, path);
    } else {
      args.push("--ro-bind", path, path);
      visibleSources.push(path);
    }
  }
  args.push("--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp");
  const userMounts = [
    { path: spec.workspace, flag: "--bind" },
    ...(spec.media ? [{ path: spec.media, flag: "--ro-bind" }] : []),
    ...(spec.shared?.write ?? []).map((path) => ({ path, flag: "--bind" })),
    ...(spec.shared?.read ?? []).map((path) => ({ path, flag: "--ro-bind" })),
  ].sort((a, b) => a.path.split("/").length - b.path.split("/").length);
  for (const mount of userMounts) {
    args.push(mount.flag, mount.path, mount.path);
    visibleSources.push(mount.path);
  }
  for (const hidden of spec.hidden) {
    if (!visibleSources.some((source) => isInside(source, hidden))) continue;
    args.push("--tmpfs", hidden);
    for (const mount of userMounts) {
      if (mount.path !== hidden && isInside(hidden, mount.path)) args.push(mount.flag, mount.path, mount.path);
    }
  }
  for (const file of spec.masked ?? []) args.push("--ro-bind", "/dev/null", file);
  args.push("--remount-ro", "/", "--unshare-all");
  // --disable-userns needs an explicit --unshare-user (--unshare-all only tries one).
  if (spec.disableUserns) args.push("--unshare-user", "--disable-userns");
  if (spec.network) args.push("--share-net");
  args.push("--new-session", "--die-with-parent", "--cap-drop", "ALL", "--clearenv");
  for (const [name, value] of Object.entries(spec.env)) args.push("--setenv", name, value);
  args.push("--chdir", spec.workingDir, "--", ...(spec.limits ? limitArgs(spec.limits) : []), ...command);
  return args;
}

/** HOME, PATH, LANG, TERM and the names the user allowlisted that are set on the host; nothing else. */
export function sandboxEnv(hostEnv: NodeJS.ProcessEnv, home: string, allowlist: readonly string[]) {
  const env: Record<string, string> = { HOME: home, PATH: SANDBOX_PATH, LANG: hostEnv.LANG || "C.UTF-8", TERM: "dumb" };
  for (const name of allowlist) {
    const value = hostEnv[name];
    if (value !== undefined && !NEVER_PASSED.has(name) && !(name in env)) env[name] = value;
  }
  return env;
}
