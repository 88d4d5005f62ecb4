import { type RunRequest, runProcess } from "../tools/exec/run-process.js";

/** The program and its arguments as given in `argv` (no shell sees them); `input` is the text to speak. */
export type CommandRun = Omit<RunRequest, "file" | "args" | "env"> & { argv: string[] };

/** `{in}`, `{out}` and the like in each argument replaced by their values (pincer's own paths and settings). */
export function substitute(argv: string[], values: Record<string, string>): string[] {
  return argv.map((arg) => arg.replace(/\{(\w+)\}/g, (whole, name: string) => values[name] ?? whole));
}

/** Runs a speech command to its end and returns its standard output (bytes); throws one short sentence saying why not (it did
 * not start, took too long, failed). The command leads its own process group, killed whole however the call ends. */
export async function runCommand(run: CommandRun): Promise<Buffer> {
  const [file, ...args] = run.argv;
  const name = file.split("/").at(-1);
  // What the command sees of pincer's environment: enough to find its programs and voices, none of its secrets.
  const kept = ["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR"].filter((key) => process.env[key]);
  const env = Object.fromEntries(kept.map((key) => [key, process.env[key] as string]));
  const outcome = await runProcess({ ...run, file, args, env }).catch((err: Error) => {
    throw new Error(`${name} could not be started (${err.message})`);
  });
  if (outcome.timedOutAfterSeconds) throw new Error(`${name} took longer than ${Math.round(run.timeoutSeconds)} s`);
  if (outcome.cancelled) throw new Error(`${name} was stopped`);
  if (outcome.overflowBytes) throw new Error(`${name} wrote more than ${run.maxBufferBytes} bytes`);
  if (outcome.exitCode !== 0) {
    const said = Buffer.from(outcome.stderr).toString("utf8").trim().split("\n").at(-1)?.slice(0, 200);
    const how = outcome.signal ? `was killed by ${outcome.signal}` : `exited with code ${outcome.exitCode}`;
    throw new Error(`${name} ${how}${said ? `: ${said}` : ""}`);
  }
  return Buffer.from(outcome.stdout);
}
