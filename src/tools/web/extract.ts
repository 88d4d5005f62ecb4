import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { packageRoot } from "../../paths.js";
import type { ReadableText } from "./html-to-markdown.js";
import { stripTags } from "./html-to-text.js";

export type BodyKind = "html" | "json" | "text" | "binary";

/**
 * What the body is, from its Content-Type, or sniffed from its first bytes when the server sent
 * none (or a generic one): HTML, JSON, other text, or binary that web_fetch does not read.
 */
export function classifyBody(contentType: string | undefined, body: Buffer): BodyKind {
  const type = (contentType ?? "").split(";")[0].trim().toLowerCase();
  if (type === "text/html" || type === "application/xhtml+xml") return "html";
  if (type === "application/json" || type.endsWith("+json")) return "json";
  if (type.startsWith("text/") || type === "application/xml" || type.endsWith("+xml")) return "text";
  if (type === "application/javascript" || type === "application/x-ndjson") return "text";
  if (type !== "" && type !== "application/octet-stream" && type !== "binary/octet-stream") return "binary";
  const head = body.subarray(0, 1024);
  if (head.includes(0)) return "binary";
  const start = head.toString("utf8").trimStart().toLowerCase();
  if (start.startsWith("<!doctype html") || start.startsWith("<html") || /<(head|body|title)[\s>]/.test(start)) {
    return "html";
  }
  if (start.startsWith("{") || start.startsWith("[")) return "json";
  return "text";
}

/** Decodes the body with the charset the header (or, for HTML, a meta tag) names; UTF-8 otherwise. */
export function decodeBody(body: Buffer, contentType: string | undefined, kind: BodyKind): string {
  const fromHeader = /charset\s*=\s*"?([\w.:-]+)/i.exec(contentType ?? "")?.[1];
  const fromMeta =
    kind === "html"
      ? /<meta[^>]+charset\s*=\s*["']?([\w.:-]+)/i.exec(body.subarray(0, 2048).toString("latin1"))?.[1]
      : undefined;
  for (const label of [fromHeader, fromMeta, "utf-8"]) {
    if (!label) continue;
    try {
      return new TextDecoder(label).decode(body);
    } catch {
      // An unknown label: try the next one.
    }
  }
  return body.toString("utf8");
}

export interface HtmlLimits {
  timeoutMs: number;
  memoryMb: number;
  /** Conversions running at once; the rest wait their turn. */
  concurrency: number;
}

/**
 * Converts HTML pages in worker threads, a few at a time, so no page can block the daemon's
 * event loop or take all its memory. A page the worker cannot convert in time (or at all)
 * comes back as its text without markup, with the reason in `plain`.
 */
export function createHtmlConverter(limits: HtmlLimits): (html: string, url: string) => Promise<ReadableText> {
  let running = 0;
  const waiting: Array<() => void> = [];
  return async (html, url) => {
    // A finishing conversion hands its slot straight to the next waiter.
    if (running >= limits.concurrency) await new Promise<void>((resolve) => waiting.push(resolve));
    else running++;
    try {
      return await runWorker(html, url, limits);
    } catch (err) {
      return { text: stripTags(html), plain: (err as Error).message };
    } finally {
      const next = waiting.shift();
      if (next) next();
      else running--;
    }
  };
}

function runWorker(html: string, url: string, limits: HtmlLimits): Promise<ReadableText> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(workerScript(), {
      workerData: { html, url },
      resourceLimits: { maxOldGenerationSizeMb: limits.memoryMb },
      stdout: true,
      stderr: true,
    });
    let settled = false;
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      fn();
      void worker.terminate();
    };
    const timer = setTimeout(
      () => finish(() => reject(new Error(`converting it took longer than ${limits.timeoutMs / 1000} s`))),
      limits.timeoutMs,
    );
    worker.once("message", (result: ReadableText) => finish(() => resolve(result)));
    worker.once("error", (err) => finish(() => reject(new Error(`converting it failed: ${err.message}`))));
    worker.once("exit", (code) => finish(() => reject(new Error(`converting it failed (exit ${code})`))));
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
