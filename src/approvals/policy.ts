import { createHash } from "node:crypto";
import type { Button } from "../bus/types.js";
import { matchesGlob } from "../text.js";
import { unlisted } from "../tools/exec/command-parts.js";

/** What config `approvals` asks for, with exec.allowPatterns compiled. */
export interface ApprovalPolicy {
  exec: "off" | "ask" | "unlisted";
  /** Tool-name globs (`*` any run of characters): these tools ask too. exec is governed by `exec` alone. */
  tools: readonly string[];
  /** exec.allowPatterns: in `unlisted` mode a command whose every part matches one runs without asking. */
  allowPatterns: readonly RegExp[];
}

/** A call that must be asked about. `summary`: exactly what will run, the command (and its folder) or the tool and its
 * arguments, long strings shortened, then a hash of the full arguments so it still binds to them. `remember`: the
 * "always allowed" entry that covers the call, `exec:<the exact command>` or `tool:<name>`. */
type AskedCall = { summary: string; remember: string };

export type Choice = "once" | "always" | "deny";

/** Longer calls are refused unasked: a prompt must fit in one chat message, and show all of a command. */
export const MAX_SUMMARY_CHARS = 700;
/** Another tool's string argument shows this much of itself (a file's content can be any length). */
const SHOWN_STRING_CHARS = 200;

/** The call as it is asked about, or undefined when the policy lets it run unasked. An "always allowed" entry equal to
 * `remember` (the store's, approvals.ts) lets it run too; an exec's only while its files are unchanged. */
export function askedCall(tool: string, args: Record<string, unknown>, policy: ApprovalPolicy): AskedCall | undefined {
  if (tool !== "exec") {
    if (!policy.tools.some((glob) => matchesGlob(tool, glob))) return undefined;
    return { summary: toolSummary(tool, args), remember: `tool:${tool}` };
  }
  const command = String(args.command ?? "");
  const { exec, allowPatterns } = policy;
  if (exec === "off" || (exec === "unlisted" && allowPatterns.length > 0 && !unlisted(command, allowPatterns))) return;
  // The folder as the shell would say it: a line of the command cannot pass for it, and "Always allow" of `rm -rf *`
  // in one folder is not an allow in another.
  const exact = typeof args.working_dir === "string" ? `cd ${shellWord(args.working_dir)} && ${command}` : command;
  return { summary: shown(exact), remember: `exec:${exact}` };
}

/** The tool and its arguments, each long string its start only; then the full arguments' hash. */
function toolSummary(tool: string, args: Record<string, unknown>): string {
  let cut = false;
  const short = (_key: string, value: unknown) => {
    if (typeof value !== "string" || value.length <= SHOWN_STRING_CHARS) return value;
    cut = true;
    return `${value.slice(0, SHOWN_STRING_CHARS)}… (${value.length} characters in all)`;
  };
  const text = shown(`${tool} ${JSON.stringify(args, short, 1)}`);
  if (!cut) return text;
  return `${text}\nsha256 of the full arguments: ${createHash("sha256").update(JSON.stringify(args)).digest("hex")}`;
}

/** What does not show, or reorders the text: controls, bidi marks, zero-width and default-ignorable characters, odd spaces. */
const HIDDEN = /[^\P{Cc}\n\t]|[\p{Cf}\p{DI}\p{Zl}\p{Zp}\u2800]|[^\P{Zs} ]/gu;

/** The text as a person must read it to know what runs: hidden characters as `<U+XXXX>`, and no two backticks side by
 * side (a zero-width space between), since Discord ends a code block at the first ``` whatever its fence. */
function shown(text: string): string {
  return text
    .replace(HIDDEN, (c) => `<U+${(c.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0")}>`)
    .replace(/`(?=`)/g, "`\u200B");
}

function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`;
}

export function approvalButtons(id: string): Button[][] {
  const labels: Record<Choice, string> = { once: "Allow once", always: "Always allow", deny: "Deny" };
  return [Object.entries(labels).map(([choice, label]) => ({ label, data: `a:${id}:${choice}` }))];
}

/** A tap's data read back; undefined for anything else (forged, truncated, another prefix). */
export function parseTapData(data: string): { id: string; choice: Choice } | undefined {
  const m = /^a:([A-Za-z0-9_-]{1,40}):(once|always|deny)$/.exec(data);
  return m ? { id: m[1], choice: m[2] as Choice } : undefined;
}

/** Who may decide: the person the run speaks for (`channel:userId`) in the chat asked; without one, the control page. */
export function mayDecide(
  approval: { sessionKey: string; decider?: string },
  tap: { sessionKey: string; decider: string },
): boolean {
  return approval.sessionKey === tap.sessionKey && approval.decider !== undefined && approval.decider === tap.decider;
}

/** The command in a code fence no backtick run inside it can close. */
export function fenced(text: string): string {
  const longest = Math.max(0, ...(text.match(/`+/g) ?? []).map((run) => run.length));
  const fence = "`".repeat(Math.max(3, longest + 1));
  return `${fence}\n${text}\n${fence}`;
}
