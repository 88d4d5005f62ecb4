import { type BigIntStats, closeSync, fstatSync, read, readSync } from "node:fs";
import { promisify } from "node:util";
import { ToolError } from "../tool.js";
import { type Opened, openInScope } from "./safe-open.js";

const readAsync = promisify(read);

/**
 * Reads an open regular file, at most `maxBytes`: the size is checked before reading, and a file
 * that grows while it is read is cut off at the cap instead of filling memory.
 */
export async function readOpened(opened: Opened, maxBytes: number, what: string): Promise<Buffer> {
  if (opened.stats.size > maxBytes) throw tooLarge(what, opened.stats.size, maxBytes);
  const buffer = Buffer.alloc(Math.min(opened.stats.size, maxBytes) + 1);
  let length = 0;
  while (length < buffer.length) {
    const { bytesRead } = await readAsync(opened.fd, buffer, length, buffer.length - length, null);
    if (bytesRead === 0) break;
    length += bytesRead;
  }
  if (length > opened.stats.size && length > maxBytes) throw tooLarge(what, length, maxBytes);
  return buffer.subarray(0, length);
}

function readOpenedSync(fd: number, maxBytes: number): Buffer | undefined {
  const buffer = Buffer.alloc(maxBytes + 1);
  let length = 0;
  while (length < buffer.length) {
    const n = readSync(fd, buffer, length, buffer.length - length, null);
    if (n === 0) break;
    length += n;
  }
  return length > maxBytes ? undefined : buffer.subarray(0, length);
}

function tooLarge(what: string, size: number, max: number): ToolError {
  return new ToolError(
    `"${what}" is too large to read whole (${formatMB(size)}, the limit is ${formatMB(max)}); use grep to find the part you need, or exec with head, tail or sed -n.`,
  );
}

function formatMB(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

export type SafeText = { ok: true; text: string; path: string } | { ok: false; reason: string };

/**
 * Reads a small text file below `root` (a workspace prompt file, a SKILL.md, memory notes) the
 * race-free way the file tools do: no symlink is followed out of `root`, FIFOs, sockets and devices
 * are refused without blocking, and a file larger than `maxBytes` is refused before it is read.
 * Synchronous on purpose (callers build a prompt synchronously); every step is a non-blocking
 * metadata call or a bounded read of a regular file. Never throws: `reason` says why not.
 */
export function readTextBeneath(root: string, relativePath: string, maxBytes: number): SafeText {
  return readTextBeneathStamped(root, relativePath, maxBytes, false);
}

/**
 * readTextBeneath that also says exactly which file it read: the descriptor's own status with
 * nanosecond times, taken before the read (for a cache that must know when the file changes).
 */
export function readTextBeneathStamped(
  root: string,
  relativePath: string,
  maxBytes: number,
  stamp = true,
): SafeText & { stats?: BigIntStats } {
  let opened: Opened | undefined;
  try {
    opened = openInScope(relativePath, { workspace: root }, { access: "read", want: "file", noLinks: true });
    if (opened.stats.size > maxBytes) {
      return { ok: false, reason: `larger than ${maxBytes} bytes (${opened.stats.size})` };
    }
    // Before the read: a change during or after it then shows as a newer change time.
    const stats = stamp ? fstatSync(opened.fd, { bigint: true }) : undefined;
    const bytes = readOpenedSync(opened.fd, maxBytes);
    if (!bytes) return { ok: false, reason: `grew past ${maxBytes} bytes while it was read` };
    const text = bytes.toString("utf8");
    return stats ? { ok: true, text, path: opened.path, stats } : { ok: true, text, path: opened.path };
  } catch (err) {
    return { ok: false, reason: (err as Error).message };
  } finally {
    if (opened) closeSync(opened.fd);
  }
}
