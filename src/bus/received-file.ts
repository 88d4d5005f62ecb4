import { createWriteStream } from "node:fs";
import { rm } from "node:fs/promises";
import { type Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";

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
