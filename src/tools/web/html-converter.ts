import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { packageRoot } from "../../paths.js";
import type { ReadableText } from "./html-to-markdown.js";

export interface HtmlLimits {
  timeoutMs: number;
  memoryMb: number;
  /** Conversions (and worker threads) at once; the rest wait their turn. */
  concurrency: number;
  /** An idle worker ends after this long, so an unused daemon holds no threads. */
  idleMs?: number;
}

export type HtmlConverter = (html: string, url: string) => Promise<ReadableText>;

type Reply = { ok: true; result: ReadableText } | { ok: false; error: string };

/**
 * Converts HTML pages in worker threads, a few at a time, so no page can block the daemon's
 * event loop or take all its memory. Workers are kept for the next page (starting one and
 * loading the libraries costs more than converting an article); one that runs past the time
 * limit is terminated. A page the worker cannot convert in time (or at all) comes back as its
 * text without markup, with the reason in `plain`.
 */
export function createHtmlConverter(limits: HtmlLimits): HtmlConverter {
  const idle: Array<{ worker: Worker; timer: NodeJS.Timeout }> = [];
  const waiting: Array<() => void> = [];
  let running = 0;
  const idleMs = limits.idleMs ?? 30_000;

  const take = (): Worker => {
    const kept = idle.pop();
    if (kept) {
      clearTimeout(kept.timer);
      return kept.worker;
    }
    return new Worker(workerScript(), {
      resourceLimits: { maxOldGenerationSizeMb: limits.memoryMb },
      stdout: true,
      stderr: true,
    });
  };
  const keep = (worker: Worker) => {
    worker.unref();
    const timer = setTimeout(() => {
      const at = idle.findIndex((entry) => entry.worker === worker);
      if (at >= 0) idle.splice(at, 1);
      void worker.terminate();
    }, idleMs).unref();
    idle.push({ worker, timer });
  };

  return async (html, url) => {
    // A finishing conversion hands its slot straight to the next waiter.
    if (running >= limits.concurrency) await new Promise<void>((resolve) => waiting.push(resolve));
    else running++;
    const worker = take();
    try {
      const result = await convertIn(worker, html, url, limits.timeoutMs);
      keep(worker);
      return result;
    } catch (err) {
      void worker.terminate();
      // The parser is only needed here, in the daemon's thread: loaded on the first failed conversion.
      const { stripTags } = await import("./html-to-text.js");
      return { text: stripTags(html), plain: (err as Error).message };
    } finally {
      const next = waiting.shift();
      if (next) next();
      else running--;
    }
  };
}

function convertIn(worker: Worker, html: string, url: string, timeoutMs: number): Promise<ReadableText> {
  worker.ref();
  return new Promise((resolve, reject) => {
    const done = (fn: () => void) => {
      clearTimeout(timer);
      worker.off("message", onMessage).off("error", onError).off("exit", onExit);
      fn();
    };
    const onMessage = (reply: Reply) =>
      done(() => (reply.ok ? resolve(reply.result) : reject(new Error(`converting it failed: ${reply.error}`))));
    const onError = (err: Error) => done(() => reject(new Error(`converting it failed: ${err.message}`)));
    const onExit = (code: number) => done(() => reject(new Error(`converting it failed (exit ${code})`)));
    const timer = setTimeout(
      () => done(() => reject(new Error(`converting it took longer than ${timeoutMs / 1000} s`))),
      timeoutMs,
    );
    worker.on("message", onMessage).on("error", onError).on("exit", onExit);
    worker.postMessage({ html, url });
  });
}

/**
 * The compiled worker file. Next to this module when running from dist/; from the TypeScript
 * sources (tests) the built copy in dist/ is used, so tests need `npm run build` first.
 */
function workerScript(): string {
  const sibling = fileURLToPath(new URL("./html-worker.js", import.meta.url));
  if (existsSync(sibling)) return sibling;
  const built = join(packageRoot(), "dist", "src", "tools", "web", "html-worker.js");
  if (existsSync(built)) return built;
  throw new Error("the HTML converter is missing: run npm run build");
}
