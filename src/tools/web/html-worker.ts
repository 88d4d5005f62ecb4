/**
 * Worker-thread entry: converts one HTML page, so a huge or pathological page costs a thread
 * (with its own time and memory limits) instead of blocking the daemon's event loop.
 */
import { parentPort, workerData } from "node:worker_threads";
import { htmlToMarkdown } from "./html-to-markdown.js";

const { html, url } = workerData as { html: string; url: string };
parentPort?.postMessage(htmlToMarkdown(html, url));
