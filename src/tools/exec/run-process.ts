import type { ExecOutcome } from "./output.js";

export interface RunRequest {
  file: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  timeoutSeconds: number;
  /** /stop, shutdown or the registry's own timeout. */
  signal: AbortSignal;
  /** Per stream; past it the command is stopped, so a flood cannot fill memory. */
  maxBufferBytes: number;
}

/**
 * Runs one process as the leader of its own process group and, however it ends (normally, on
 * timeout, on cancel or on an output flood), kills that whole group, so nothing it started in the
 * background outlives the call. Under bwrap the group holds bwrap itself; --die-with-parent and
 * the private PID namespace take everything inside down with it.
 */
export async function runProcess(request: RunRequest): Promise<ExecOutcome> {
  // Loaded by the first command, not at start (~14 MB).
  const { execa } = await import("execa");
  const stop = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    stop.abort();
  }, request.timeoutSeconds * 1000);
  const onCancel = () => stop.abort();
  request.signal.addEventListener("abort", onCancel, { once: true });
  if (request.signal.aborted) stop.abort();

  const subprocess = execa(request.file, request.args, {
    cwd: request.cwd,
    env: request.env,
    extendEnv: false,
    stdin: "ignore",
    encoding: "buffer",
    stripFinalNewline: false,
    maxBuffer: request.maxBufferBytes,
    reject: false,
    detached: true,
    cancelSignal: stop.signal,
    killSignal: "SIGKILL",
    cleanup: true,
  });
  const pid = subprocess.pid;
  const killGroup = () => {
    if (pid !== undefined) killProcessGroup(pid);
  };
  stop.signal.addEventListener("abort", killGroup, { once: true });

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
      timedOutAfterSeconds: timedOut ? request.timeoutSeconds : undefined,
      cancelled: !timedOut && result.isCanceled,
      overflowBytes: result.isMaxBuffer ? request.maxBufferBytes : undefined,
    };
  } finally {
    clearTimeout(timer);
    request.signal.removeEventListener("abort", onCancel);
    killGroup();
  }
}

function killProcessGroup(pid: number): void {
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // ESRCH: the group is already gone, which is the point.
  }
}
