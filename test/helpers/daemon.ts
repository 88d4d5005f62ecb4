import { type ChildProcess, execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { promisify } from "node:util";
import { packageRoot } from "../../src/paths.js";

const main = join(packageRoot(), "dist/src/cli/main.js");
const run = promisify(execFile);

export type Daemon = ChildProcess & { output: string[] };

/** Starts the built `pincer gateway` as a user would, with exactly the environment given. */
export function startDaemon(home: string, env: Record<string, string>): Daemon {
  const child = spawn(process.execPath, [main, "gateway"], {
    cwd: home,
    env: { PATH: process.env.PATH, HOME: home, PINCER_HOME: home, LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  }) as Daemon;
  child.output = [];
  child.stdout?.on("data", (chunk: Buffer) => child.output.push(chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => child.output.push(chunk.toString()));
  return child;
}

/** kill -9: no shutdown code runs, as when the machine or the process dies. */
export async function killHard(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGKILL");
  await once(child, "exit");
}

/** Runs one built CLI command (`pincer pairing revoke …`) to its end. */
export async function pincer(
  args: string[],
  home: string,
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [main, ...args], {
      cwd: home,
      env: { PATH: process.env.PATH, HOME: home, PINCER_HOME: home, ...env },
      timeout: 20_000,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** Polls `check` until it returns something, or fails with the daemon's output. */
export async function until<T>(
  check: () => T | undefined | null | false,
  daemon: Daemon,
  what: string,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value) return value;
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}\n--- daemon output ---\n${daemon.output.join("")}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
