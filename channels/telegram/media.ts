import { constants } from "node:fs";
import { type FileHandle, mkdir, open, realpath } from "node:fs/promises";
import { isAbsolute, join, sep } from "node:path";
import type { Readable } from "node:stream";
import type { Api } from "grammy";
import { formatBytes } from "../../src/bus/format-bytes.js";
import { downloadCapped, safeFileName, saveCapped, TooLarge } from "../../src/bus/received-file.js";
import { errorText } from "../../src/bus/types.js";
import type { AttachmentRef } from "./normalize.js";

export interface MediaDeps {
  api: Api;
  token: string;
  apiRoot: string;
  dir: string;
  maxBytes: number;
  maxAudioSeconds: number; // longer voice notes and audio files are not downloaded (nor transcribed)
  timeoutMs: number; // the whole download, headers and body; a stalled one must not hold its chat's queue for good
}

/** Downloads one attachment into the media folder, refusing anything over `maxBytes` (before the download when
 * Telegram tells the size, and while streaming); a line saying why not instead of a path. */
export async function downloadAttachment(
  deps: MediaDeps,
  attachment: AttachmentRef,
  prefix: string,
): Promise<{ path: string } | { note: string }> {
  const note = (why: string) => ({ note: `[${attachment.label}${why}]` });
  const failed = (why: string) => note(` could not be downloaded: ${why}`);
  const tooBig = (size: number) =>
    note(` (${formatBytes(size)}) was not downloaded: larger than the ${formatBytes(deps.maxBytes)} limit`);
  if (attachment.fileSize !== undefined && attachment.fileSize > deps.maxBytes) return tooBig(attachment.fileSize);
  if (attachment.durationSeconds !== undefined && attachment.durationSeconds > deps.maxAudioSeconds)
    return note(`: not transcribed, longer than the ${deps.maxAudioSeconds} s limit`);
  const target = join(deps.dir, `${prefix}-${safeFileName(attachment.fileName)}`);
  try {
    const file = await deps.api.getFile(attachment.fileId);
    if (file.file_size !== undefined && file.file_size > deps.maxBytes) return tooBig(file.file_size);
    if (!file.file_path) return failed("Telegram gave no file path");
    await mkdir(deps.dir, { recursive: true });
    let source: Readable | undefined;
    if (isAbsolute(file.file_path)) {
      const local = await localFile(file.file_path, deps.token);
      if (local === "refused") return failed("the Bot API named a file outside its files folder");
      if (local) {
        const { size } = await local.stat();
        if (size > deps.maxBytes) {
          await local.close();
          return tooBig(size);
        }
        source = local.createReadStream();
      }
    }
    const url = `${deps.apiRoot}/file/bot${deps.token}/${file.file_path}`;
    if (source) await saveCapped(source, target, deps.maxBytes);
    else await downloadCapped(url, target, { maxBytes: deps.maxBytes, timeoutMs: deps.timeoutMs });
    return { path: target };
  } catch (err) {
    if (err instanceof TooLarge) return tooBig(err.size);
    if (err instanceof DOMException && err.name === "TimeoutError")
      return failed(`no complete answer within ${deps.timeoutMs / 1000} s`);
    return failed(errorText(err));
  }
}

// A self-hosted Bot API server in --local mode answers with a path on its disk: `<--dir>/<bot token>/<kind>/file_N`.
// Only a regular file inside that token's folder, links resolved, is read ("refused" otherwise); undefined when the
// folder is not on this machine (the server runs in a container): the file is then fetched over HTTP.
async function localFile(path: string, token: string): Promise<FileHandle | "refused" | undefined> {
  const parts = path.split(sep);
  const at = parts.lastIndexOf(token);
  if (at < 1 || at === parts.length - 1) return "refused";
  const folder = await realpath(parts.slice(0, at + 1).join(sep)).catch(() => undefined);
  if (!folder) return undefined;
  const real = await realpath(path).catch(() => undefined);
  if (!real?.startsWith(folder + sep)) return "refused";
  const handle = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  if ((await handle.stat()).isFile()) return handle;
  await handle.close();
  return "refused";
}
