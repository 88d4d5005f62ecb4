import { existsSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parentPort, Worker } from "node:worker_threads";
import { packageRoot } from "../paths.js";
import { Slots } from "../slots.js";

export interface WorkerPoolOptions {
  maxThreads: number;
  /** An idle thread ends after this long, so an unused daemon holds none. */
  idleMs: number;
  /** Heap limit of each thread: a pathological input costs that thread, not the daemon. */
  memoryMb?: number;
}

/** Runs one task; rejects with the signal's reason (a TimeoutError past `timeoutMs`, counted from its start). */
export type RunTask<Task, Result> = (task: Task, signal: AbortSignal, timeoutMs?: number) => Promise<Result>;

type Reply = { ok: true; result: unknown } | { ok: false; error: string };

/** Runs tasks in threads of `file` (which calls serveTasks), at most `maxThreads` at once; a thread is kept for the
 * next task and ends when idle, or is terminated when its task fails, times out or aborts (which really stops it).
 * From the TypeScript sources (tests) the built copy in dist/ runs, so tests need `npm run build` first. */
export function createWorkerPool<Task, Result>(file: URL, options: WorkerPoolOptions): RunTask<Task, Result> {
  const idle: Array<{ worker: Worker; timer: NodeJS.Timeout }> = [];
  const slots = new Slots(options.maxThreads);
  const take = (): Worker => {
    const kept = idle.pop();
    if (kept) clearTimeout(kept.timer);
    const resourceLimits = options.memoryMb ? { maxOldGenerationSizeMb: options.memoryMb } : undefined;
    return kept?.worker ?? new Worker(builtFile(fileURLToPath(file)), { resourceLimits, stdout: true, stderr: true });
  };
  const keep = (worker: Worker) => {
    worker.unref();
    const timer = setTimeout(() => {
      idle.splice(idle.indexOf(entry), 1);
      void worker.terminate();
    }, options.idleMs).unref();
    const entry = { worker, timer };
    idle.push(entry);
  };
  return async (task, signal, timeoutMs) => {
    const release = await slots.acquire(signal);
    let worker: Worker | undefined;
    try {
      // Stopped while the slot was handed over; inside the try, as a thread that cannot start, it gives the slot back.
      signal.throwIfAborted();
      worker = take();
      const stop = timeoutMs === undefined ? signal : AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]);
      const result = await runIn(worker, task, stop);
      keep(worker);
      return result as Result;
    } catch (err) {
      void worker?.terminate();
      throw err;
    } finally {
      release();
    }
  };
}

function runIn(worker: Worker, task: unknown, signal: AbortSignal): Promise<unknown> {
  worker.ref();
  return new Promise((resolve, reject) => {
    const done = (settle: () => void) => {
      signal.removeEventListener("abort", onAbort);
      worker.off("message", onMessage).off("error", onError).off("exit", onExit);
      settle();
    };
    const onMessage = (reply: Reply) => done(() => (reply.ok ? resolve(reply.result) : reject(new Error(reply.error))));
    const onError = (err: Error) => done(() => reject(err));
    const onExit = (code: number) => done(() => reject(new Error(`the thread exited (code ${code})`)));
    const onAbort = () => done(() => reject(signal.reason));
    signal.addEventListener("abort", onAbort, { once: true });
    worker.on("message", onMessage).on("error", onError).on("exit", onExit);
    worker.postMessage(task);
  });
}

export function serveTasks<Task>(handle: (task: Task) => unknown): void {
  parentPort?.on("message", (task: Task) => {
    try {
      parentPort?.postMessage({ ok: true, result: handle(task) });
    } catch (err) {
      parentPort?.postMessage({ ok: false, error: (err as Error).message });
    }
  });
}

function builtFile(path: string): string {
  if (existsSync(path)) return path;
  const built = join(packageRoot(), "dist", relative(packageRoot(), path));
  if (existsSync(built)) return built;
  throw new Error(`${relative(packageRoot(), path)} is missing: run npm run build`);
}
