import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempHome } from "./app.js";
import { hasSystemPackage } from "./system-packages.js";

/** Whether espeak-ng, ffmpeg (and, when asked, pocketsphinx) are here: one loud line and a skip without them, a
 * failure under CI. */
export function hasSpeechPackages(options: { stt?: boolean } = {}): boolean {
  const needed: Array<[string, string]> = [
    ["espeak-ng", "espeak-ng"],
    ["ffmpeg", "ffmpeg"],
    ...(options.stt ? ([["pocketsphinx_continuous", "pocketsphinx"]] as Array<[string, string]>) : []),
  ];
  return needed.every(([binary, apt]) => hasSystemPackage(binary, apt));
}

/** `text` spoken by espeak-ng as a Telegram-style voice note (OGG/Opus, mono, 48 kHz); its bytes. */
export function spokenNote(text: string): Buffer {
  const dir = tempHome("pincer-speech-");
  const wav = join(dir, "said.wav");
  const ogg = join(dir, "note.ogg");
  execFileSync("espeak-ng", ["-w", wav, "--stdin"], { input: text });
  execFileSync("ffmpeg", ["-loglevel", "error", "-y", "-i", wav, "-c:a", "libopus", "-b:a", "32k", "-ac", "1", ogg]);
  return readFileSync(ogg);
}

export interface AudioFacts {
  format: string;
  codec: string;
  seconds: number;
  /** Peak level of the decoded audio, 0–1. */
  peak: number;
  /** Root mean square level, 0–1. */
  rms: number;
}

/** What the bytes are (container, codec) and what they sound like once decoded back by ffmpeg. */
export function audioFacts(bytes: Buffer): AudioFacts {
  const file = join(tempHome("pincer-audio-"), "note");
  writeFileSync(file, bytes);
  const probe = JSON.parse(
    execFileSync(
      "ffprobe",
      ["-v", "error", "-show_entries", "stream=codec_name:format=format_name", "-of", "json", file],
      {
        encoding: "utf8",
      },
    ),
  ) as { streams: Array<{ codec_name: string }>; format: { format_name: string } };
  const rate = 8000;
  const pcm = execFileSync(
    "ffmpeg",
    ["-loglevel", "error", "-i", file, "-ac", "1", "-ar", String(rate), "-f", "s16le", "-"],
    {
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  const samples = new Int16Array(pcm.buffer, pcm.byteOffset, Math.floor(pcm.length / 2));
  let peak = 0;
  let sum = 0;
  for (const s of samples) {
    peak = Math.max(peak, Math.abs(s));
    sum += s * s;
  }
  return {
    format: probe.format.format_name,
    codec: probe.streams[0]?.codec_name ?? "",
    seconds: samples.length / rate,
    peak: peak / 32768,
    rms: Math.sqrt(sum / Math.max(1, samples.length)) / 32768,
  };
}
