import { constants } from "node:fs";
import { open, readlink } from "node:fs/promises";
import { isInside } from "./files/workspace-path.js";
import { ToolError } from "./tool.js";

/**
 * Reads a file that must be a regular file under one of `roots` (real paths), at most `maxBytes`.
 * The file is opened without following a final symlink and without blocking on a FIFO; where
 * the open descriptor really points is then checked, so a folder swapped for a symlink between
 * an earlier check and the open cannot lead outside the roots.
 */
export async function readRegularFile(path: string, roots: string[], maxBytes: number, shown = path): Promise<Buffer> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ELOOP") throw new ToolError(`"${shown}" is a symlink; only regular files can be used.`);
    if (code === "ENOENT") throw new ToolError(`"${shown}" does not exist.`);
    throw new ToolError(`"${shown}" cannot be opened (${code ?? (err as Error).message}).`);
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) throw new ToolError(`"${shown}" is not a regular file.`);
    if (stat.size > maxBytes) {
      throw new ToolError(`"${shown}" is ${stat.size} bytes, more than the limit of ${maxBytes} bytes.`);
    }
    const real = await readlink(`/proc/self/fd/${handle.fd}`).catch(() => undefined);
    if (real === undefined || !roots.some((root) => isInside(root, real))) {
      throw new ToolError(`"${shown}" leads outside the workspace.`);
    }
    // The file may grow after the stat: read one byte past its size to notice it.
    const buffer = Buffer.alloc(stat.size + 1);
    let length = 0;
    while (length < buffer.length) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    if (length > stat.size) throw new ToolError(`"${shown}" changed while it was being read; try again.`);
    return buffer.subarray(0, length);
  } finally {
    await handle.close();
  }
}
