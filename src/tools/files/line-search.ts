import { ToolError } from "../tool.js";
import { createWorkerPool } from "../worker-pool.js";
import type { LineTask } from "./line-worker.js";

export const MAX_PATTERN_CHARS = 1000;
/** Searches running at once per pincer process (a thread is about 8 MB); more wait their turn. */
const MAX_CONCURRENT_SEARCHES = 4;

export const GREP_STOPPED = "grep was stopped (time limit or /stop).";

export type LineSearch = (pattern: string, text: string, max: number, signal: AbortSignal) => Promise<number[]>;

/** Matches lines with RE2 (`(a+)+$` cannot backtrack) in worker threads: its cost grows with the pattern (`(?:a?){1000}
 * a{1000}` takes ~75 ms to compile, most of a second per 10 KB line), and an abort terminates the thread. `text` ""
 * with `max` 0 only compiles: a bad pattern fails before any file is read. */
export function createLineSearch(maxThreads = MAX_CONCURRENT_SEARCHES): LineSearch {
  // One grep's files follow each other closely; past that, an idle thread costs more than a new one.
  const run = createWorkerPool<LineTask, number[] | string>(new URL("./line-worker.js", import.meta.url), {
    maxThreads,
    idleMs: 1000,
  });
  return async (pattern, text, max, signal) => {
    if (pattern.length > MAX_PATTERN_CHARS) {
      throw new ToolError(`the pattern is longer than ${MAX_PATTERN_CHARS} characters; use a shorter one.`);
    }
    const hits = await run({ pattern, text, max }, signal).catch((err: unknown) => {
      throw signal.aborted ? new ToolError(GREP_STOPPED) : err;
    });
    if (typeof hits !== "string") return hits;
    throw new ToolError(
      `the pattern is not a valid regular expression (RE2 syntax: no lookaround or backreferences): ${hits}`,
    );
  };
}
