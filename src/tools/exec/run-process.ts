import { attempt } from "../../attempt.js";
import type { ExecOutcome } from "./output.js";

export interface RunRequest {
  file: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  timeoutSeconds: number;
  /** /stop, shutdown or the registry's timeout. */
  signal: AbortSignal;
  /** Per stream; past it the command is stopped, so a flood cannot fill memory. */
  maxBufferBytes: number;
  /** Written to the standard input (data, never arguments); without it there is none. */
  input?: string;
}

/** Runs one process as leader of its own group and, however it ends, kills the whole group: nothing it started outlives
 * the call. Under bwrap the group holds bwrap; --die-with-parent and its PID namespace take the rest. */
export async function runProcess(request: RunRequest): Promise<ExecOutcome> {
  // Loaded by the first command, not at start (~14 MB).
  const { execa } = await import("execa");
  const timeout = AbortSignal.timeout(Math.round(request.timeoutSeconds * 1000));
  const stop = AbortSignal.any([request.signal, timeout]);
  const subprocess = execa(request.file, request.args, {
    cwd: request.cwd,
    env: request.env,
    extendEnv: false,
    ...(request.input === undefined ? { stdin: "ignore" as const } : { input: request.input }),
    encoding: "buffer",
    stripFinalNewline: false,
    maxBuffer: request.maxBufferBytes,
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
    if (result.failed && result.exitCode === undefined && !result.isCanceled && !result.isMaxBuffer && !result.signal) {
      // Never started (bwrap or sh missing): a plain failure, not a command result.
      throw new Error(result.originalMessage || result.shortMessage);
    }
    return {
      stdout: result.stdout ?? new Uint8Array(),
      stderr: result.stderr ?? new Uint8Array(),
      exitCode: result.exitCode,
      signal: result.isCanceled || result.isMaxBuffer ? undefined : result.signal,
      timedOutAfterSeconds: timeout.aborted ? request.timeoutSeconds : undefined,
      cancelled: !timeout.aborted && result.isCanceled,
      overflowBytes: result.isMaxBuffer ? request.maxBufferBytes : undefined,
    };
  } finally {
    stop.removeEventListener("abort", killGroup);
    killGroup();
  }
}

export function killProcessGroup(pid: number | undefined, signal: NodeJS.Signals = "SIGKILL"): void {
  // ESRCH: the group is already gone, which is the point.
  if (pid !== undefined) attempt(() => process.kill(-pid, signal));
}
