import { stripVTControlCharacters } from "node:util";
import { looksBinary } from "../files/binary.js";

/** How one command ended, as the runner saw it. */
export interface ExecOutcome {
  stdout: Uint8Array;
  stderr: Uint8Array;
  exitCode?: number;
  /** The signal that ended the command when nobody asked for it (for example an out-of-memory kill). */
  signal?: string;
  timedOutAfterSeconds?: number;
  cancelled?: boolean;
  /** Output passed the byte limit, so the command was stopped early. */
  overflowBytes?: number;
}

// Every C0 control except tab and newline, plus DEL: exactly the bytes that must not reach the model raw.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point.
const CONTROL_BYTES = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g;

/**
 * Text the model can read: colour codes gone, carriage-return progress bars turned into lines,
 * other control bytes shown as \xNN. Mostly-binary output is summarised rather than shown.
 */
export function printable(bytes: Uint8Array): string {
  if (bytes.length === 0) return "";
  if (looksBinary(bytes)) {
    return `(binary output, ${bytes.length} bytes, not shown; pipe it through \`xxd | head\` or \`base64\` to see it)`;
  }
  const text = stripVTControlCharacters(new TextDecoder("utf-8").decode(bytes));
  return text
    .replace(/\r\n?/g, "\n")
    .replace(CONTROL_BYTES, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
}

export function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}\n… (truncated, ${text.length - max} more chars)`;
}

/** Splits the character budget so a flood on stdout never hides the error on stderr. */
export function splitBudget(stdoutLength: number, stderrLength: number, max: number): [number, number] {
  if (stdoutLength + stderrLength <= max) return [stdoutLength, stderrLength];
  const half = Math.floor(max / 2);
  const forStderr = Math.min(stderrLength, Math.max(half, max - stdoutLength));
  return [max - forStderr, forStderr];
}

/** The text the model sees for one exec call. */
export function formatExecResult(outcome: ExecOutcome, maxChars: number): string {
  const stdout = printable(outcome.stdout).replace(/\n+$/, "");
  const stderr = printable(outcome.stderr).replace(/\n+$/, "");
  const [outBudget, errBudget] = splitBudget(stdout.length, stderr.length, maxChars);
  const sections: string[] = [];
  if (stdout) sections.push(truncate(stdout, outBudget));
  if (stderr) sections.push(`STDERR:\n${truncate(stderr, errBudget)}`);

  const notes: string[] = [];
  if (outcome.timedOutAfterSeconds !== undefined) {
    notes.push(
      `Timed out after ${outcome.timedOutAfterSeconds} s: the command and every process it started were killed.`,
    );
  } else if (outcome.cancelled) {
    notes.push("Cancelled: the command and every process it started were killed.");
  } else if (outcome.overflowBytes !== undefined) {
    notes.push(
      `Stopped: the output passed ${outcome.overflowBytes} bytes, so the command and every process it started were killed. Redirect big output to a file and read parts of it.`,
    );
  } else if (outcome.signal) {
    notes.push(`Killed by ${outcome.signal}.`);
  } else if (outcome.exitCode !== undefined && outcome.exitCode !== 0) {
    notes.push(`Exit code: ${outcome.exitCode}`);
  }
  if (sections.length === 0 && notes.length === 0) return "(no output)";
  return [...sections, ...notes].join("\n");
}
