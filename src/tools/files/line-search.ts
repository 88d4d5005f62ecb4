import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import { ToolError } from "../tool.js";

export const MAX_PATTERN_CHARS = 1000;

/**
 * The worker's whole program, CommonJS, so it runs the same from src/ (tests) and dist/. It only
 * matches lines of text it is sent; all file access stays on the main thread's safe descriptors.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const { RE2JS } = require(workerData.re2js);
let re;
try {
  re = RE2JS.compile(workerData.pattern);
  parentPort.postMessage({ ready: true });
} catch (err) {
  parentPort.postMessage({ error: String(err && err.message) });
}
parentPort.on("message", ({ text, max }) => {
  const hits = [];
  const lines = text.split("\\n");
  for (let i = 0; i < lines.length && hits.length < max; i++) if (re.test(lines[i])) hits.push(i);
  parentPort.postMessage({ hits });
});
`;

export function checkPatternLength(pattern: string): void {
  if (pattern.length > MAX_PATTERN_CHARS) {
    throw new ToolError(`the pattern is longer than ${MAX_PATTERN_CHARS} characters; use a shorter one.`);
  }
}

function syntaxError(message: string): ToolError {
  return new ToolError(
    `the pattern is not a valid regular expression (RE2 syntax: no lookaround or backreferences): ${message}`,
  );
}

/**
 * Compiles a model-given pattern with RE2 (linear time: `(a+)+$` cannot backtrack) and matches
 * lines with it, both in a worker thread. RE2 is linear in the text but its cost also grows with
 * the pattern (compiling `(?:a?){1000}a{1000}` takes ~75 ms, matching it most of a second per
 * 10 KB line), so neither runs on the event loop: other chats keep being answered, and `close()`
 * (on a timeout or /stop) terminates the worker, which really stops the work.
 */
export class LineSearcher {
  private readonly worker: Worker;
  private failure: Error | undefined;
  private pending: { resolve(hits: number[]): void; reject(err: Error): void } | undefined;
  /** Resolves once the pattern compiled; rejects with the syntax error, for the model. */
  readonly ready: Promise<void>;

  constructor(pattern: string) {
    checkPatternLength(pattern);
    const re2js = createRequire(import.meta.url).resolve("re2js");
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { pattern, re2js } });
    this.worker.unref();
    let compiled: { resolve(): void; reject(err: Error): void } | undefined;
    this.ready = new Promise((resolve, reject) => {
      compiled = { resolve, reject };
    });
    this.ready.catch(() => undefined);
    this.worker.on("message", (message: { ready?: true; error?: string; hits?: number[] }) => {
      if (message.ready) return compiled?.resolve();
      if (message.error !== undefined) {
        this.failure = syntaxError(message.error);
        return compiled?.reject(this.failure);
      }
      const waiter = this.pending;
      this.pending = undefined;
      waiter?.resolve(message.hits ?? []);
    });
    const fail = (err: Error) => {
      this.failure ??= err;
      compiled?.reject(this.failure);
      const waiter = this.pending;
      this.pending = undefined;
      waiter?.reject(this.failure);
    };
    this.worker.on("error", fail);
    this.worker.on("exit", () => fail(new Error("the search was stopped")));
  }

  /** 0-based numbers of the lines that match, at most `max`. One call at a time. */
  search(text: string, max: number): Promise<number[]> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject };
      this.worker.postMessage({ text, max });
    });
  }

  async close(): Promise<void> {
    await this.worker.terminate();
  }
}

/**
 * At most `size` searches hold a worker (about 8 MB each) at once, so fifty greps in one batch
 * cannot take half a gigabyte; the others wait their turn, or give up when their call is stopped.
 */
export class SearchSlots {
  private free: number;
  private waiting: Array<() => void> = [];

  constructor(size: number) {
    this.free = size;
  }

  async acquire(signal: AbortSignal): Promise<() => void> {
    if (signal.aborted) throw new ToolError("grep was stopped (time limit or /stop).");
    if (this.free > 0) {
      this.free--;
      return this.releaser();
    }
    await new Promise<void>((resolve, reject) => {
      const wake = () => {
        signal.removeEventListener("abort", onAbort);
        resolve();
      };
      const onAbort = () => {
        this.waiting = this.waiting.filter((w) => w !== wake);
        reject(new ToolError("grep was stopped (time limit or /stop)."));
      };
      this.waiting.push(wake);
      signal.addEventListener("abort", onAbort, { once: true });
    });
    return this.releaser();
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.free++;
    };
  }
}
