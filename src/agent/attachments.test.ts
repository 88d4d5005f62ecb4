import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { crc32 } from "node:zlib";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { mediaKind } from "../bus/media-kind.js";
import { IMAGE_MAX_BYTES, imageDataUrl, prepareAttachments } from "./attachments.js";

const dir = mkdtempSync(join(tmpdir(), "pincer-attachments-"));
const noTranscripts = async () => {
  throw new Error("not expected");
};

/** A valid PNG whose header claims `width` × `height`: decoding it for real would need gigabytes. */
async function pngClaiming(width: number, height: number): Promise<Buffer> {
  const png = await sharp({ create: { width: 1, height: 1, channels: 3, background: "#000" } })
    .png()
    .toBuffer();
  // IHDR data starts at byte 16 (signature 8, length 4, type 4); its CRC covers type and data.
  png.writeUInt32BE(width, 16);
  png.writeUInt32BE(height, 20);
  png.writeUInt32BE(crc32(png.subarray(12, 29)), 29);
  return png;
}

describe("mediaKind", () => {
  it.each([
    ["photo-1.jpg", "image"],
    ["x.PNG", "image"],
    ["voice-3.ogg", "audio"],
    ["voice-message.oga", "audio"],
    ["notes.md", "text"],
    ["data.csv", "text"],
    ["clip.mp4", "other"],
    ["archive.tar.gz", "other"],
    ["no-extension", "other"],
  ])("%s is %s", (name, kind) => {
    expect(mediaKind(`/media/${name}`)).toBe(kind);
  });
});

describe("images", () => {
  it("re-encodes a noisy photo until it fits the byte cap", async () => {
    const noise = Buffer.alloc(3000 * 2000 * 3);
    for (let i = 0; i < noise.length; i++) noise[i] = (i * 2654435761) >>> 24;
    const path = join(dir, "noise.png");
    await sharp(noise, { raw: { width: 3000, height: 2000, channels: 3 } })
      .png()
      .toFile(path);
    const url = await imageDataUrl(path);
    const bytes = Buffer.from(url.split(",")[1], "base64");
    expect(bytes.length).toBeLessThanOrEqual(IMAGE_MAX_BYTES);
    const meta = await sharp(bytes).metadata();
    expect(Math.max(meta.width ?? 0, meta.height ?? 0)).toBeLessThanOrEqual(1536);
  });

  it("refuses a decompression bomb from its header, and says so instead of an image part", async () => {
    const path = join(dir, "bomb.png");
    writeFileSync(path, await pngClaiming(100_000, 100_000));
    const prepared = await prepareAttachments([path], { vision: true, transcribe: noTranscripts });
    expect(prepared.images).toEqual([]);
    expect(prepared.lines[1]).toMatch(/^\[the image bomb\.png could not be read: .*pixel limit/i);
  });
});

describe("prepareAttachments", () => {
  it("turns a failed transcription into a line for the model and a sentence for the user", async () => {
    const path = join(dir, "voice-1.ogg");
    writeFileSync(path, "OggS");
    const prepared = await prepareAttachments([path], {
      vision: true,
      transcribe: async () => {
        throw new Error("the transcription endpoint answered 503");
      },
    });
    expect(prepared.lines).toEqual([
      `[voice note at ${path}: could not be transcribed (the transcription endpoint answered 503)]`,
    ]);
    expect(prepared.problems).toEqual([
      "I could not transcribe your voice note (the transcription endpoint answered 503).",
    ]);
  });

  it("cuts a document excerpt on a character, never inside one, and reads no more than it shows", async () => {
    const path = join(dir, "emoji.txt");
    writeFileSync(path, `a${"😀".repeat(5000)}`);
    const [line] = (await prepareAttachments([path], { vision: true, transcribe: noTranscripts })).lines;
    const body = line.split("\n")[1];
    expect(body).toBe(`a${"😀".repeat(999)}`);
    expect(line).toMatch(/the first 1999 characters of 20001 bytes/);
  });
});
