import { clip } from "../../text.js";
import { parseCommands, WRITES_TO_FILE } from "./shell-parse.js";

/** The simple commands a shell command would run: parts chained with `;`, `&&`, `||`, `|`, `&` or newlines, and those
 * inside subshells, backticks and `$(…)`. A tokenizer for a filter, not a parser: in doubt it yields more parts. */
export function commandParts(command: string): string[] {
  const parts: string[] = [];
  collect(command, parts);
  return parts.map(normalizePart).filter((part) => part !== "");
}

/** Why exec.allowPatterns does not list `command` (for the guard and approvals), or undefined: the shell grammar
 * proves every simple command it can run, each matches a pattern, none writes a file (`echo x >> AGENTS.md` is not the
 * listed `echo`) or sets a variable (`LD_PRELOAD=./x.so ls` runs more than `ls`), each names its program plainly, and
 * none is a program that runs other commands. */
export function unlisted(command: string, patterns: readonly RegExp[]): string | undefined {
  const parsed = parseCommands(command);
  if ("unproven" in parsed) {
    return parsed.unproven === WRITES_TO_FILE ? WRITES_TO_FILE : `pincer cannot prove what it runs: ${parsed.unproven}`;
  }
  if (parsed.commands.length === 0) return "it runs nothing";
  for (const { words, text } of parsed.commands) {
    if (ASSIGNMENT_WORD.test(words[0])) return "it sets a variable for the command it runs (X=… cmd)";
    if (!patterns.some((pattern) => pattern.test(text))) return `"${clip(text, 80)}" is not in it`;
    if (/[$*?[~]/.test(words[0])) return `the program "${words[0]}" is only known when it runs`;
    if (RUNS_OTHERS.has(words[0].replace(/^.*\//, ""))) {
      return `"${words[0]}" runs other commands (or changes how they are found), which no pattern can vouch for`;
    }
    if (words[0].replace(/^.*\//, "") === "find" && words.some((w) => /^-(?:exec|execdir|ok|okdir)$/.test(w))) {
      return "find -exec runs other commands, which no pattern can vouch for";
    }
  }
}

const ASSIGNMENT_WORD = /^[A-Za-z_][A-Za-z0-9_]*\+?=/;

/** Programs whose arguments are commands, or that change what later names run: a pattern on their text proves nothing. */
const RUNS_OTHERS = new Set(
  (
    "eval exec command builtin enable hash alias unalias trap source . env xargs nohup nice ionice timeout time " +
    "sudo doas su runuser setsid stdbuf chroot unshare nsenter flock watch parallel script busybox " +
    "sh bash dash zsh ksh mksh fish export readonly declare typeset local set unset"
  ).split(" "),
);

function collect(text: string, parts: string[]): void {
  let current = "";
  const flush = () => {
    if (current.trim() !== "") parts.push(current.trim());
    current = "";
  };
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === "\\") {
      current += text.slice(i, i + 2);
      i += 2;
    } else if (c === "'" || c === '"') {
      const end = c === "'" ? quotedEnd(text, i + 1, "'") : doubleQuoteEnd(text, i + 1, parts);
      current += text.slice(i, end + 1);
      i = end + 1;
    } else if (c === "`" || (c === "$" && text[i + 1] === "(")) {
      const end = substitution(text, i, parts);
      current += text.slice(i, end + 1);
      i = end + 1;
    } else if (c === "(") {
      const end = matchingParen(text, i);
      collect(text.slice(i + 1, end), parts);
      i = end + 1;
    } else if (c === "&" && (text[i - 1] === ">" || text[i - 1] === "<" || text[i + 1] === ">")) {
      current += c; // 2>&1, &> file: a redirection, not a separator
      i++;
    } else if (c === ";" || c === "&" || c === "|" || c === "\n") {
      flush();
      i++;
    } else if ((c === "{" || c === "}") && isWordOnItsOwn(text, i)) {
      flush();
      i++;
    } else if (c === "#" && (i === 0 || /\s/.test(text[i - 1]))) {
      i = text.indexOf("\n", i) === -1 ? text.length : text.indexOf("\n", i); // a comment
    } else {
      current += c;
      i++;
    }
  }
  flush();
}

/** Collects the commands of the backticks or `$(…)` at `i`; returns the index of its closing character. */
function substitution(text: string, i: number, parts: string[]): number {
  if (text[i] === "`") {
    const end = quotedEnd(text, i + 1, "`");
    collect(text.slice(i + 1, end), parts);
    return end;
  }
  const end = matchingParen(text, i + 1);
  // $((…)) is arithmetic, not a command; anything else in $(…) runs.
  if (text[i + 2] !== "(") collect(text.slice(i + 2, end), parts);
  return end;
}

/** Inside double quotes `$(…)` and backticks still run, so their commands are collected too. */
function doubleQuoteEnd(text: string, from: number, parts: string[]): number {
  let i = from;
  while (i < text.length && text[i] !== '"') {
    if (text[i] === "\\") i += 2;
    else if (text[i] === "`" || (text[i] === "$" && text[i + 1] === "(")) i = substitution(text, i, parts) + 1;
    else i++;
  }
  return i;
}

/** Index of the closing `quote` (backslash escapes skipped, except in single quotes), or the end of the text. */
function quotedEnd(text: string, from: number, quote: string): number {
  let i = from;
  while (i < text.length && text[i] !== quote) i += text[i] === "\\" && quote !== "'" ? 2 : 1;
  return i;
}

/** Index of the `)` that closes the `(` at `open`, skipping quoted text. */
function matchingParen(text: string, open: number): number {
  let depth = 0;
  let i = open;
  while (i < text.length) {
    const c = text[i];
    if (c === "\\") i += 2;
    else if (c === "'" || c === '"') i = quotedEnd(text, i + 1, c) + 1;
    else {
      if (c === "(") depth++;
      if (c === ")" && --depth === 0) return i;
      i++;
    }
  }
  return text.length;
}

function isWordOnItsOwn(text: string, i: number): boolean {
  return /[\s;&|]/.test(text[i - 1] ?? " ") && /[\s;&|]/.test(text[i + 1] ?? " ");
}

const KEYWORD_ONLY = /^(?:then|else|do|done|fi|esac|in)$/;
const LEADING_KEYWORD = /^(?:if|then|else|elif|do|while|until|!|time)\s+/;
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=(?:'[^']*'|"[^"]*"|[^\s'"]*)\s*/;

/** The command a part runs: keywords and leading `VAR=value` go (their `$(…)` was collected); `for … in` runs nothing. */
function normalizePart(part: string): string {
  let text = part.trim();
  for (;;) {
    const before = text;
    text = text.replace(LEADING_KEYWORD, "").replace(ASSIGNMENT, "").trim();
    if (text === before) break;
  }
  if (KEYWORD_ONLY.test(text) || /^for\s+\w+(\s+in\b|$)/.test(text) || /^case\s/.test(text)) return "";
  return text;
}
