import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import type { Attachment } from "discord.js";
import { downloadCapped, safeFileName } from "../../src/bus/received-file.js";
import { errorText } from "../../src/bus/types.js";

/** What is read of a discord.js attachment: `size` as announced, `duration` of a voice message. */
type AttachmentInfo = Pick<Attachment, "id" | "name" | "url" | "size" | "duration">;

/** Saves a message's attachments into `dir`; one too large or failing becomes a note for the model, never a failure. */
export async function downloadAttachments(
  attachments: AttachmentInfo[],
  options: {
    dir: string;
    maxBytes: number;
    maxAudioSeconds: number;
    messageId: string;
    /** DISCORD_API_URL: its origin may serve attachments too (a proxy, the tests' fake server). */
    apiUrl: string;
  },
): Promise<{ paths: string[]; notes: string[] }> {
  const result = { paths: [] as string[], notes: [] as string[] };
  if (attachments.length === 0) return result;
  await mkdir(options.dir, { recursive: true });
  for (const attachment of attachments) {
    const seconds = attachment.duration;
    const skipped =
      attachment.size > options.maxBytes
        ? `[attachment ${attachment.name} skipped: ${attachment.size} bytes is over the ${options.maxBytes} byte limit]`
        : seconds !== null && seconds > options.maxAudioSeconds
          ? `[voice message ${attachment.name}, ${Math.round(seconds)} s: not transcribed, longer than the ${options.maxAudioSeconds} s limit]`
          : !attachmentUrlAllowed(attachment.url, options.apiUrl)
            ? `[attachment ${attachment.name} not downloaded: its address is not on Discord's CDN]`
            : undefined;
    if (skipped) {
      result.notes.push(skipped);
      continue;
    }
    const path = join(options.dir, `discord-${options.messageId}-${attachment.id}-${safeFileName(attachment.name)}`);
    try {
      await downloadCapped(attachment.url, path, { maxBytes: options.maxBytes, timeoutMs: 60_000, redirect: "error" });
      result.paths.push(path);
    } catch (err) {
      result.notes.push(`[attachment ${attachment.name} could not be downloaded: ${errorText(err)}]`);
    }
  }
  return result;
}

const DISCORD_CDN = ["https://cdn.discordapp.com", "https://media.discordapp.net"];

/** Only Discord's CDN (or the REST server's origin) is fetched: no message can point pincer at a private address. */
export function attachmentUrlAllowed(url: string, apiUrl: string): boolean {
  try {
    const { origin } = new URL(url);
    return DISCORD_CDN.includes(origin) || origin === new URL(apiUrl).origin;
  } catch {
    return false;
  }
}
