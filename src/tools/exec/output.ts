import { stripVTControlCharacters } from "node:util";
import { looksBinary } from "../files/binary.js";

export interface ExecOutcome {
  stdout: Uint8Array;
  stderr: Uint8Array;
  exitCode?: number;
  /** The signal that ended the command when nobody asked for it (an out-of-memory kill, say). */
  signal?: string;
  timedOutAfterSeconds?: number;
  cancelled?: boolean;
  /** Output passed this byte limit, so the command was stopped early. */
  overflowBytes?: number;
}

// Every C0 control except tab and newline, plus DEL: exactly the bytes that must not reach the model raw.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point.
const CONTROL_BYTES = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g;

/** Colour codes gone, carriage-return progress bars made lines, other controls as \xNN; binary summarised. */
export function printable(bytes: Uint8Array): string {
  if (looksBinary(bytes)) {
    return `(binary output, ${bytes.length} bytes, not shown; pipe it through \`xxd | head\` or \`base64\` to see it)`;
  }
  return stripVTControlCharacters(new TextDecoder("utf-8").decode(bytes))
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
  const forStderr = Math.min(stderrLength, Math.max(Math.floor(max / 2), max - stdoutLength));
  return [max - forStderr, forStderr];
}

export function formatExecResult(outcome: ExecOutcome, maxChars: number): string {
  const stdout = printable(outcome.stdout).replace(/\n+$/, "");
  const stderr = printable(outcome.stderr).replace(/\n+$/, "");
  const [outBudget, errBudget] = splitBudget(stdout.length, stderr.length, maxChars);
  const sections: string[] = [];
  if (stdout) sections.push(truncate(stdout, outBudget));
  if (stderr) sections.push(`STDERR:\n${truncate(stderr, errBudget)}`);
  const killed = "the command and every process it started were killed";
  const { timedOutAfterSeconds, overflowBytes, exitCode } = outcome;
  if (timedOutAfterSeconds !== undefined) sections.push(`Timed out after ${timedOutAfterSeconds} s: ${killed}.`);
  else if (outcome.cancelled) sections.push(`Cancelled: ${killed}.`);
  else if (overflowBytes !== undefined) {
    sections.push(
      `Stopped: the output passed ${overflowBytes} bytes, so ${killed}. Redirect big output to a file and read parts of it.`,
    );
  } else if (outcome.signal) sections.push(`Killed by ${outcome.signal}.`);
  else if (exitCode) sections.push(`Exit code: ${exitCode}`);
  return sections.length === 0 ? "(no output)" : sections.join("\n");
}
