import { type BigIntStats, close, closeSync, fstatSync, ftruncate, read, readSync, writeFile } from "node:fs";
import { promisify } from "node:util";
import { ToolError } from "../tool.js";
import { type Opened, type OpenRequest, openInScope, type PathScope } from "./safe-open.js";

const readAsync = promisify(read);
const closeAsync = promisify(close);
const ftruncateAsync = promisify(ftruncate);
const writeFileAsync = promisify(writeFile);
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

/** Reads an open file, at most `maxBytes`: the size is checked first; a file growing meanwhile is cut at the cap. */
export async function readOpened(opened: Pick<Opened, "fd" | "stats">, maxBytes: number, what: string) {
  if (opened.stats.isDirectory()) throw new ToolError(`"${what}" is a folder; use list_dir to see what is in it.`);
  const tooLarge = (size: number) =>
    new ToolError(
      `"${what}" is too large to read whole (${mb(size)}, the limit is ${mb(maxBytes)}); use grep to find the part you need, or exec with head, tail or sed -n.`,
    );
  if (opened.stats.size > maxBytes) throw tooLarge(opened.stats.size);
  const buffer = Buffer.alloc(Math.min(opened.stats.size, maxBytes) + 1);
  let length = 0;
  for (let n = -1; n !== 0 && length < buffer.length; length += n) {
    n = (await readAsync(opened.fd, buffer, length, buffer.length - length, null)).bytesRead;
  }
  if (length > opened.stats.size && length > maxBytes) throw tooLarge(length);
  return buffer.subarray(0, length);
}

/** Opens `path` in the scope and reads it whole (see readOpened); `check` may refuse what was opened first. */
export async function readInScope(
  path: string,
  scope: PathScope,
  request: OpenRequest,
  maxBytes: number,
  check?: (opened: Opened) => void,
): Promise<{ opened: Opened; bytes: Buffer }> {
  const opened = openInScope(path, scope, request);
  try {
    check?.(opened);
    return { opened, bytes: await readOpened(opened, maxBytes, path) };
  } finally {
    closeSync(opened.fd);
  }
}

export type SafeText = { ok: true; text: string; path: string } | { ok: false; reason: string };

/** Reads a small text file below `root` race-free, refusing every symlink, non-regular files and files over `maxBytes`.
 * Synchronous (prompts are built so), but each step is a non-blocking metadata call or a bounded read. Never throws:
 * `reason` says why not. `stats` (taken before the read) tells a cache when the file changes. */
export function readTextBeneath(root: string, path: string, maxBytes: number): SafeText & { stats?: BigIntStats } {
  let opened: Opened | undefined;
  try {
    opened = openInScope(path, { workspace: root }, { access: "read", want: "file", noLinks: true });
    if (opened.stats.size > maxBytes)
      return { ok: false, reason: `larger than ${maxBytes} bytes (${opened.stats.size})` };
    // Before the read: a change during or after it then shows as a newer change time.
    const stats = fstatSync(opened.fd, { bigint: true });
    const buffer = Buffer.alloc(maxBytes + 1);
    let length = 0;
    for (let n = -1; n !== 0 && length < buffer.length; length += n) {
      n = readSync(opened.fd, buffer, length, buffer.length - length, null);
    }
    if (length > maxBytes) return { ok: false, reason: `grew past ${maxBytes} bytes while it was read` };
    return { ok: true, text: buffer.toString("utf8", 0, length), path: opened.path, stats };
  } catch (err) {
    return { ok: false, reason: (err as Error).message };
  } finally {
    if (opened) closeSync(opened.fd);
  }
}

/** Replaces a file's content through a race-free descriptor (never a swapped-in link or FIFO); true if created. */
export async function writeInScope(path: string, scope: PathScope, content: Buffer, create: boolean): Promise<boolean> {
  const opened = openInScope(path, scope, { access: "write", want: "file", create });
  try {
    await ftruncateAsync(opened.fd, 0);
    // A fresh descriptor stands at offset 0, so this writes the whole buffer from the start.
    await writeFileAsync(opened.fd, content);
    return opened.created;
  } finally {
    await closeAsync(opened.fd);
  }
}
