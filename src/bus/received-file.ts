import { createWriteStream } from "node:fs";
import { rm } from "node:fs/promises";
import { Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { ReadableStream } from "node:stream/web";

/** A received file's name made harmless as one path segment on any filesystem, keeping its extension. */
export function safeFileName(name: string): string {
  const cleaned = name.replace(/[^\w.-]+/g, "_").replace(/^\.+/, "");
  return (cleaned || "file").slice(-80);
}

export class TooLarge extends Error {
  constructor(
    readonly size: number,
    maxBytes: number,
  ) {
    super(`larger than the ${maxBytes} byte limit`);
  }
}

/** Streams a download into a new private file; TooLarge past `maxBytes` (announced sizes lie); a failed one is removed. */
export async function saveCapped(source: Readable, path: string, maxBytes: number): Promise<void> {
  let received = 0;
  const cap = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      received += chunk.length;
      done(received > maxBytes ? new TooLarge(received, maxBytes) : null, chunk);
    },
  });
  try {
    await pipeline(source, cap, createWriteStream(path, { mode: 0o600 }));
  } catch (err) {
    await rm(path, { force: true });
    throw err;
  }
}

/** Fetches `url` (headers and body within `timeoutMs`) into a file as saveCapped does; `redirect: "error"` where each hop
 * would have to pass the caller's check of the address. */
export async function downloadCapped(
  url: string,
  path: string,
  options: { maxBytes: number; timeoutMs: number; redirect?: "error" | "follow" },
): Promise<void> {
  const response = await fetch(url, { signal: AbortSignal.timeout(options.timeoutMs), redirect: options.redirect });
  if (!response.ok || !response.body) {
    await response.body?.cancel();
    throw new Error(`HTTP ${response.status}`);
  }
  await saveCapped(Readable.fromWeb(response.body as ReadableStream<Uint8Array>), path, options.maxBytes);
}
