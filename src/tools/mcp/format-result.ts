import type { CallToolResult, ContentBlock } from "@modelcontextprotocol/sdk/types.js";
import { attempt } from "../../attempt.js";
import { formatBytes } from "../../bus/format-bytes.js";
import { truncate } from "../exec/output.js";
import { ToolError } from "../tool.js";

/** Answers the workspace-relative path. */
export type SaveFile = (bytes: Buffer, extension: string) => Promise<string>;

export const MAX_FILES_PER_RESULT = 10;

const EXTENSIONS: Record<string, string> = {
  "image/png": "png",
  "image/jpeg": "jpg",
  "image/gif": "gif",
  "image/webp": "webp",
  "image/svg+xml": "svg",
  "audio/wav": "wav",
  "audio/x-wav": "wav",
  "audio/mpeg": "mp3",
  "audio/ogg": "ogg",
  "application/pdf": "pdf",
  "application/zip": "zip",
  "application/gzip": "gz",
  "text/plain": "txt",
  "application/json": "json",
};

/** Text as is, structured content as JSON (unless a text block says the same), images, audio and binary resources saved
 * to the workspace, links listed. `isError` results throw, so the model reads `Error: …`. */
export async function formatResult(result: CallToolResult, save: SaveFile, maxChars: number): Promise<string> {
  const parts: string[] = [];
  // A server answering with thousands of images must not fill the disk: the first few are kept.
  let files = 0;
  const limited: Limited = (bytes, extension) => (++files > MAX_FILES_PER_RESULT ? undefined : save(bytes, extension));
  for (const block of result.content ?? []) parts.push(await describe(block, limited));
  const structured = result.structuredContent;
  if (structured !== undefined && !parts.some((p) => sameJson(p, structured))) {
    parts.push(JSON.stringify(structured, null, 2));
  }
  const text = truncate(parts.join("\n"), maxChars);
  if (result.isError) throw new ToolError(text || "the server reported an error without saying what");
  return text || "(no output)";
}

/** Undefined past the per-result limit: that file is not saved. */
type Limited = (...args: Parameters<SaveFile>) => ReturnType<SaveFile> | undefined;

async function describe(block: ContentBlock, save: Limited): Promise<string> {
  switch (block.type) {
    case "text":
      return block.text;
    case "image":
    case "audio":
      return `[${block.type} ${block.mimeType} ${await saveBase64(block.data, block.mimeType, save)}]`;
    case "resource_link":
      return `[resource link: ${block.name} ${block.uri}${block.mimeType ? ` (${block.mimeType})` : ""}${block.description ? ` — ${block.description}` : ""}]`;
    case "resource": {
      const { resource } = block;
      const mime = resource.mimeType ?? "application/octet-stream";
      if ("text" in resource && typeof resource.text === "string") {
        return `[resource ${resource.uri} (${mime})]\n${resource.text}`;
      }
      const blob = "blob" in resource && typeof resource.blob === "string" ? resource.blob : "";
      return `[resource ${resource.uri} (${mime}) ${await saveBase64(blob, mime, save)}]`;
    }
    default:
      return `[${(block as { type: string }).type} content, not shown]`;
  }
}

async function saveBase64(data: string, mimeType: string, save: Limited): Promise<string> {
  const bytes = Buffer.from(data, "base64");
  const path = await save(bytes, EXTENSIONS[mimeType.toLowerCase()] ?? "bin");
  if (path === undefined)
    return `not saved (${sizeOf(bytes.length)}): only ${MAX_FILES_PER_RESULT} files are kept per result`;
  return `saved to ${path}, ${sizeOf(bytes.length)}`;
}

/** `4 bytes` below a KB, as the model has always read it; above, the shared `4.9 KB` form. */
function sizeOf(n: number): string {
  return n < 1024 ? `${n} bytes` : formatBytes(n);
}

function sameJson(text: string, value: unknown): boolean {
  return attempt(() => JSON.stringify(JSON.parse(text)) === JSON.stringify(value), false);
}
