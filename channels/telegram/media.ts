import { createWriteStream, existsSync } from "node:fs";
import { copyFile, mkdir, rm, stat } from "node:fs/promises";
import { isAbsolute, join } from "node:path";
import { Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { Api } from "grammy";
import type { AttachmentRef } from "./normalize.js";

export interface MediaDeps {
  api: Api;
  token: string;
  apiRoot: string;
  dir: string;
  maxBytes: number;
  /** Longer voice notes and audio files are not downloaded (nor transcribed). */
  maxAudioSeconds: number;
  /** The whole download, headers and body; a stalled one must not hold its chat's queue for good. */
  timeoutMs?: number;
}

/** What became of an attachment: a local path for the agent, or a line saying why not. */
export type MediaOutcome = { path: string } | { note: string };

/** A file name safe on any filesystem, keeping the extension. */
export function safeFileName(name: string): string {
  const cleaned = name.replace(/[^\w.-]+/g, "_").replace(/^\.+/, "");
  return (cleaned || "file").slice(-80);
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/**
 * Downloads one attachment into the media folder, refusing anything over `maxBytes` (checked
 * before the download when Telegram tells the size, and again while streaming).
 */
export async function downloadAttachment(
  deps: MediaDeps,
  attachment: AttachmentRef,
  prefix: string,
): Promise<MediaOutcome> {
  const tooBig = (size: number) => ({
    note: `[${attachment.label} (${formatBytes(size)}) was not downloaded: larger than the ${formatBytes(deps.maxBytes)} limit]`,
  });
  if (attachment.fileSize !== undefined && attachment.fileSize > deps.maxBytes) return tooBig(attachment.fileSize);
  if (attachment.durationSeconds !== undefined && attachment.durationSeconds > deps.maxAudioSeconds) {
    return { note: `[${attachment.label}: not transcribed, longer than the ${deps.maxAudioSeconds} s limit]` };
  }
  const target = join(deps.dir, `${prefix}-${safeFileName(attachment.fileName)}`);
  try {
    const file = await deps.api.getFile(attachment.fileId);
    if (file.file_size !== undefined && file.file_size > deps.maxBytes) return tooBig(file.file_size);
    if (!file.file_path) return { note: `[${attachment.label} could not be downloaded: Telegram gave no file path]` };
    await mkdir(deps.dir, { recursive: true });
    // A self-hosted Bot API server in --local mode answers with a path on its own disk.
    if (isAbsolute(file.file_path) && existsSync(file.file_path)) {
      const size = (await stat(file.file_path)).size;
      if (size > deps.maxBytes) return tooBig(size);
      await copyFile(file.file_path, target);
      return { path: target };
    }
    const timeoutMs = deps.timeoutMs ?? 60_000;
    const response = await fetch(`${deps.apiRoot}/file/bot${deps.token}/${file.file_path}`, {
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!response.ok || !response.body) {
      await response.body?.cancel();
      return { note: `[${attachment.label} could not be downloaded: HTTP ${response.status}]` };
    }
    let received = 0;
    const cap = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        received += chunk.length;
        if (received > deps.maxBytes) done(new SizeLimitError(received));
        else done(null, chunk);
      },
    });
    await pipeline(Readable.fromWeb(response.body), cap, createWriteStream(target));
    return { path: target };
  } catch (err) {
    await rm(target, { force: true });
    if (err instanceof SizeLimitError) return tooBig(err.size);
    if (err instanceof DOMException && err.name === "TimeoutError") {
      return {
        note: `[${attachment.label} could not be downloaded: no complete answer within ${formatSeconds(deps)}]`,
      };
    }
    return { note: `[${attachment.label} could not be downloaded: ${(err as Error).message}]` };
  }
}

function formatSeconds(deps: MediaDeps): string {
  return `${(deps.timeoutMs ?? 60_000) / 1000} s`;
}

class SizeLimitError extends Error {
  constructor(readonly size: number) {
    super("file is larger than the limit");
  }
}
