import { createWriteStream } from "node:fs";
import { mkdir, unlink } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";

export interface AttachmentInfo {
  id: string;
  name: string;
  url: string;
  /** Bytes, as Discord reports it before the download. */
  size: number;
  /** Length of a voice message, when Discord tells. */
  durationSeconds?: number;
}

export interface DownloadResult {
  /** Local paths of the files saved, in the order of the attachments. */
  paths: string[];
  /** One line per attachment that was skipped, for the model to know it exists. */
  notes: string[];
}

/**
 * Saves a message's attachments into `dir`. A file above `maxBytes` is skipped (by its announced
 * size, and again while streaming, since the announcement is not a promise); a failed download
 * becomes a note instead of failing the message.
 */
export async function downloadAttachments(
  attachments: AttachmentInfo[],
  options: {
    dir: string;
    maxBytes: number;
    maxAudioSeconds?: number;
    messageId: string;
    timeoutMs?: number;
    /** DISCORD_API_URL: its origin may serve attachments too (a proxy, the tests' fake server). */
    apiUrl: string;
  },
): Promise<DownloadResult> {
  const result: DownloadResult = { paths: [], notes: [] };
  if (attachments.length === 0) return result;
  await mkdir(options.dir, { recursive: true });
  for (const attachment of attachments) {
    if (attachment.size > options.maxBytes) {
      result.notes.push(
        `[attachment ${attachment.name} skipped: ${attachment.size} bytes is over the ${options.maxBytes} byte limit]`,
      );
      continue;
    }
    const seconds = attachment.durationSeconds;
    if (seconds !== undefined && options.maxAudioSeconds !== undefined && seconds > options.maxAudioSeconds) {
      result.notes.push(
        `[voice message ${attachment.name}, ${Math.round(seconds)} s: not transcribed, longer than the ${options.maxAudioSeconds} s limit]`,
      );
      continue;
    }
    if (!attachmentUrlAllowed(attachment.url, options.apiUrl)) {
      result.notes.push(`[attachment ${attachment.name} not downloaded: its address is not on Discord's CDN]`);
      continue;
    }
    const path = join(options.dir, `discord-${options.messageId}-${attachment.id}-${safeFileName(attachment.name)}`);
    try {
      await download(attachment.url, path, options.maxBytes, options.timeoutMs ?? 60_000);
      result.paths.push(path);
    } catch (err) {
      await unlink(path).catch(() => {});
      result.notes.push(`[attachment ${attachment.name} could not be downloaded: ${(err as Error).message}]`);
    }
  }
  return result;
}

const DISCORD_CDN = ["https://cdn.discordapp.com", "https://media.discordapp.net"];

/**
 * An attachment's URL comes in the message: only Discord's CDN (or the configured REST server's
 * origin) is fetched, so no message can point pincer at a local or private address.
 */
export function attachmentUrlAllowed(url: string, apiUrl: string): boolean {
  try {
    const { origin } = new URL(url);
    return DISCORD_CDN.includes(origin) || origin === new URL(apiUrl).origin;
  } catch {
    return false;
  }
}

async function download(url: string, path: string, maxBytes: number, timeoutMs: number): Promise<void> {
  // No redirects: each hop would have to pass the check above.
  const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), redirect: "error" });
  if (!response.ok || !response.body) throw new Error(`HTTP ${response.status}`);
  let received = 0;
  const body = Readable.fromWeb(response.body as import("node:stream/web").ReadableStream<Uint8Array>);
  body.on("data", (chunk: Buffer) => {
    received += chunk.length;
    if (received > maxBytes) body.destroy(new Error(`larger than the ${maxBytes} byte limit`));
  });
  await pipeline(body, createWriteStream(path, { mode: 0o600 }));
}

/** Keeps names readable but harmless as one path segment. */
export function safeFileName(name: string): string {
  const cleaned = name.replace(/[^\w.-]+/g, "_").replace(/^\.+/, "");
  return (cleaned || "file").slice(0, 100);
}
