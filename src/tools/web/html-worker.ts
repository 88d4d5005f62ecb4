/**
 * Worker-thread entry: converts HTML pages one message at a time, so a huge or pathological
 * page costs this thread (with its own time and memory limits) instead of blocking the daemon's
 * event loop. See html-converter.ts.
 */
import { parentPort } from "node:worker_threads";
import { htmlToMarkdown } from "./html-to-markdown.js";

parentPort?.on("message", ({ html, url }: { html: string; url: string }) => {
  try {
    parentPort?.postMessage({ ok: true, result: htmlToMarkdown(html, url) });
  } catch (err) {
    parentPort?.postMessage({ ok: false, error: (err as Error).message });
  }
});
