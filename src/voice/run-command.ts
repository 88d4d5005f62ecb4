import { killProcessGroup } from "../tools/exec/run-process.js";

export interface CommandRun {
  /** The program and its arguments as given: no shell sees them. */
  argv: string[];
  /** Written to the command's standard input (the text to speak): data, never arguments. */
  input?: string;
  timeoutMs: number;
  signal: AbortSignal;
  /** Standard output past this stops the command. */
  maxOutputBytes: number;
  cwd: string;
}

/** What a speech command sees of pincer's environment: enough to find its programs and voices, none of its secrets. */
export function cleanEnvironment(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const kept = ["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR"].filter((name) => env[name]);
  return Object.fromEntries(kept.map((name) => [name, env[name] as string]));
}

/** `{in}`, `{out}` and the like in each argument replaced by their values (pincer's own paths and settings). */
export function substitute(argv: string[], values: Record<string, string>): string[] {
  return argv.map((arg) => arg.replace(/\{(\w+)\}/g, (whole, name: string) => values[name] ?? whole));
}

/** Runs a speech command to its end and returns its standard output (bytes); throws one short sentence saying why not (it did
 * not start, took too long, failed). The command leads its own process group, killed whole however the call ends. */
export async function runCommand(run: CommandRun): Promise<Buffer> {
  const [file, ...args] = run.argv;
  const name = file.split("/").at(-1);
  // Loaded by the first spoken reply or transcription, not at start.
  const { execa } = await import("execa");
  const timeout = AbortSignal.timeout(run.timeoutMs);
  const stop = AbortSignal.any([run.signal, timeout]);
  const subprocess = execa(file, args, {
    cwd: run.cwd,
    env: cleanEnvironment(),
    extendEnv: false,
    ...(run.input === undefined ? { stdin: "ignore" as const } : { input: run.input }),
    encoding: "buffer",
    maxBuffer: run.maxOutputBytes,
    reject: false,
    detached: true,
    cancelSignal: stop,
    killSignal: "SIGKILL",
    cleanup: true,
  });
  const killGroup = () => killProcessGroup(subprocess.pid);
  stop.addEventListener("abort", killGroup, { once: true });
  try {
    const result = await subprocess;
    if (timeout.aborted) throw new Error(`${name} took longer than ${Math.round(run.timeoutMs / 1000)} s`);
    if (result.isCanceled) throw new Error(`${name} was stopped`);
    if (result.isMaxBuffer) throw new Error(`${name} wrote more than ${run.maxOutputBytes} bytes`);
    if (result.exitCode === undefined && !result.signal)
      throw new Error(`${name} could not be started (${result.originalMessage || result.shortMessage})`);
    if (result.failed) {
      const said = Buffer.from(result.stderr ?? [])
        .toString("utf8")
        .trim()
        .split("\n")
        .at(-1)
        ?.slice(0, 200);
      const how = result.signal ? `was killed by ${result.signal}` : `exited with code ${result.exitCode}`;
      throw new Error(`${name} ${how}${said ? `: ${said}` : ""}`);
    }
    return Buffer.from(result.stdout ?? []);
  } finally {
    stop.removeEventListener("abort", killGroup);
    killGroup();
  }
}
