import { close, ftruncate, write } from "node:fs";
import { promisify } from "node:util";
import { openInScope, type PathScope } from "./safe-open.js";

const closeAsync = promisify(close);
const ftruncateAsync = promisify(ftruncate);
const writeAsync = promisify(write);

/** Replaces a file's content through a race-free descriptor (never a swapped-in link or FIFO); true if created. */
export async function writeInScope(path: string, scope: PathScope, content: Buffer, create: boolean): Promise<boolean> {
  const opened = openInScope(path, scope, { access: "write", want: "file", create });
  try {
    await ftruncateAsync(opened.fd, 0);
    let offset = 0;
    while (offset < content.length) {
      const { bytesWritten } = await writeAsync(opened.fd, content, offset, content.length - offset, offset);
      offset += bytesWritten;
    }
    return opened.created;
  } finally {
    await closeAsync(opened.fd);
  }
}
