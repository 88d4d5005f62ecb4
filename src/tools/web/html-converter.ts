import { createWorkerPool } from "../worker-pool.js";
import type { ReadableText } from "./html-to-markdown.js";

/** Longest conversion of one page, counted from when it gets a thread. */
export const HTML_TIMEOUT_MS = 10_000;

export type HtmlConverter = (html: string, url: string, signal: AbortSignal) => Promise<ReadableText>;

/** Converts pages in two 256 MB worker threads (no page blocks the event loop); a failure gives bare text and why. */
export function createHtmlConverter(timeoutMs = HTML_TIMEOUT_MS): HtmlConverter {
  const run = createWorkerPool<{ html: string; url: string }, ReadableText>(
    new URL("./html-worker.js", import.meta.url),
    { maxThreads: 2, memoryMb: 256, idleMs: 30_000 },
  );
  return (html, url, signal) =>
    run({ html, url }, signal, timeoutMs).catch(async (err: Error) => {
      // The parser is only needed here, in the daemon's thread: loaded on the first failed conversion.
      const { stripTags } = await import("./html-to-text.js");
      const took = `took longer than ${timeoutMs / 1000} s`;
      return {
        text: stripTags(html),
        plain: `converting it ${err.name === "TimeoutError" ? took : `failed: ${err.message}`}`,
      };
    });
}
