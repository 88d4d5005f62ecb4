import { extname } from "node:path";

const kinds = (list: string) => new Set(list.split(" ").map((ext) => `.${ext}`));
const IMAGE = kinds("jpg jpeg png webp gif heic heif tif tiff bmp avif");
const AUDIO = kinds("ogg oga opus mp3 m4a wav webm flac aac mpga mpeg");
const TEXT = kinds(
  "txt md markdown csv tsv json jsonl yaml yml toml ini xml html log py js mjs ts tsx jsx go rs java c h cpp cs rb php sh sql swift kt lua r css scss tex srt vtt",
);

/** How pincer reads an attachment, by extension: the channels name downloaded files so it tells what they are. */
export function mediaKind(path: string): "image" | "audio" | "text" | "other" {
  const ext = extname(path).toLowerCase();
  if (IMAGE.has(ext)) return "image";
  if (AUDIO.has(ext)) return "audio";
  if (TEXT.has(ext)) return "text";
  return "other";
}
