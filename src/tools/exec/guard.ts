import { MAIN_AGENT } from "../../bus/types.js";
import { ConfigError } from "../../config/config.js";
import { escapeRegExp } from "../../text.js";
import { isInside } from "../files/safe-open.js";
import { commandParts, unlisted } from "./command-parts.js";

/** A cheap first filter in front of the sandbox: it stops the obvious accidents and tells the model why. Not the
 * security boundary (a determined command can always be spelled so that no regex sees it); bubblewrap is. */
export interface GuardPolicy {
  /** Extra patterns (exec.denyPatterns), matched case-insensitively against the whole command. */
  denyPatterns: RegExp[];
  /** When non-empty (exec.allowPatterns), every part of a chained command must match one. */
  allowPatterns: RegExp[];
  restrictToWorkspace: boolean;
  workspace: string;
  media: string;
  /** Folders outside the workspace a person's space reaches (`shared/`, skills). */
  shared?: string[];
  /** PINCER_HOME: refused even where a harmless prefix (/tmp) would otherwise let a path through. */
  home: string;
}

/** "part" rules look at each simple command after `sudo`, assignments and keywords are stripped. */
type DenyRule = [scope: "command" | "part", pattern: RegExp, reason: string];

const BLOCK_DEVICE = String.raw`\/dev\/(?:sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|md\d|dm-\d|loop\d|disk\d|mapper\/)`;

const DEFAULT_DENY: DenyRule[] = [
  [
    "command",
    /\brm\s+(?:[^;&|\n]*\s)?(?:-[a-z]*r[a-z]*|--recursive)\b/i,
    "recursive rm (rm -r / -rf) is blocked; delete files one by one, by name",
  ],
  ["command", /\b(?:mkfs(?:\.\w+)?|mke2fs|mkswap|wipefs|diskpart)\b/i, "formatting or partitioning disks is blocked"],
  ["part", /^format(?:\.com|\.exe)?\b/i, "formatting disks is blocked"],
  ["command", /\bdd\b[^;&|\n]*\bof=\/dev\/(?!null\b|zero\b|stdout\b|stderr\b)/i, "dd to a device is blocked"],
  [
    "command",
    new RegExp(String.raw`(?:>\s*|\btee\s+(?:-\w+\s+)*)${BLOCK_DEVICE}`, "i"),
    "writing to a block device is blocked",
  ],
  [
    "part",
    /^(?:shutdown|reboot|poweroff|halt|(?:tel)?init\s+[06]|systemctl\s+(?:poweroff|reboot|halt|kexec))\b/i,
    "shutting down or rebooting the machine is blocked",
  ],
  ["command", /([\w:.]+)\s*\(\s*\)\s*\{[^}]*\1\s*\|\s*\1\s*&/, "this looks like a fork bomb"],
];

/** Prefixes that do not change which program runs, removed before "part" rules look. */
const WRAPPERS = /^(?:(?:sudo|doas|exec|nohup|command|nice|env|timeout\s+\S+)\s+(?:-\S+\s+)*)+/i;
// /sbin/reboot runs reboot: compare program names, not paths.
const programOf = (part: string) => part.replace(WRAPPERS, "").replace(/^\S*\//, "");

/** Absolute paths that are fine anywhere: the sandbox's own /tmp and devices, and system programs. */
const HARMLESS_ABSOLUTE = [
  /^\/dev\/(?:null|zero|stdin|stdout|stderr|u?random|tty|fd\/\d+)$/,
  /^\/tmp(?:\/|$)/,
  /^\/(?:usr|bin|sbin|lib|lib32|lib64|libx32)(?:\/|$)/,
  /^\/proc\/self(?:\/|$)/,
];

const PATH_END = String.raw`(?=$|[\s/'"\`;&|<>()])`;
const PARENT_DIR = new RegExp(String.raw`(?:^|[\s/=:'"(<>|;&])\.\.${PATH_END}`);
const TILDE = /(?:^|[\s=:'"(<>|;&])~(?=$|[\s/'"`;&|<>()]|[a-z_])/i;
// A path starts a word, follows = or a redirection, or is glued to a short option (-C/etc).
const ABSOLUTE = /(?:^|[\s='"`(<>|;&,]|\s-[A-Za-z])(\/[^\s'"`;&|<>(),]*)/g;

export function checkCommand(command: string, policy: GuardPolicy): string | undefined {
  const parts = commandParts(command);
  for (const [scope, pattern, reason] of DEFAULT_DENY) {
    const hit = scope === "command" ? pattern.test(command) : parts.some((part) => pattern.test(programOf(part)));
    if (hit) return reason;
  }
  for (const pattern of policy.denyPatterns) {
    if (pattern.test(command)) return `the command matches the configured deny pattern /${pattern.source}/`;
  }
  if (policy.allowPatterns.length > 0) {
    const why = unlisted(command, policy.allowPatterns);
    if (why) return `the configured allowlist (exec.allowPatterns) does not cover this command: ${why}`;
  }
  return policy.restrictToWorkspace ? checkPaths(command, policy) : undefined;
}

function checkPaths(command: string, policy: GuardPolicy): string | undefined {
  if (PARENT_DIR.test(command)) return "paths with .. are not allowed; stay inside the workspace";
  if (TILDE.test(command))
    return "~ is not allowed; use paths relative to the workspace (HOME is an empty folder, new for each command)";
  // Paths inside the workspace and media folder are fine; blank them out before looking for others.
  let rest = command;
  for (const root of [policy.workspace, policy.media, ...(policy.shared ?? [])]) {
    rest = rest.replace(new RegExp(`${escapeRegExp(root)}${PATH_END}`, "g"), "WORKSPACE");
  }
  for (const [, path] of rest.matchAll(ABSOLUTE)) {
    if (isInside(policy.home, path)) return `${path} is pincer's own data folder, which commands never touch`;
    if (!HARMLESS_ABSOLUTE.some((ok) => ok.test(path))) {
      return `${path} is outside the workspace; use paths relative to the workspace (${policy.workspace})`;
    }
  }
}

/** Compiles exec.denyPatterns / exec.allowPatterns, naming the entry that is not a valid regex (an agent's own under
 * `agents.NAME`: main's, which the others inherit, are compiled first). */
export function compilePatterns(patterns: readonly string[], setting: string, agent = MAIN_AGENT): RegExp[] {
  const named = agent === MAIN_AGENT ? setting : `agents.${agent}.${setting}`;
  return patterns.map((source, i) => {
    try {
      return new RegExp(source, "i");
    } catch (err) {
      throw new ConfigError(
        `PINCER_CONFIG: ${named}[${i}] is not a valid regular expression: ${(err as Error).message}.`,
      );
    }
  });
}
