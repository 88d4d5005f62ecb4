import type { VoiceNote } from "../bus/types.js";
import { runCommand } from "./run-command.js";

/** Samples a second of the level track ffmpeg writes beside the note (16-bit mono): the note's length and waveform. */
const LEVEL_RATE = 2000;
/** Discord shows at most this many bars of a voice message's waveform. */
const WAVEFORM_BARS = 256;

/** ffmpeg, quiet, reading a recording (a stranger's, or what an endpoint sent) as audio containers only, from the file
 * itself: a playlist named .ogg would otherwise have it open what it names, another file (another chat's voice note) or
 * a URL. Its `-i` follows. */
export const FFMPEG_READ = [
  ...["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-protocol_whitelist", "file"],
  ...["-format_whitelist", "ogg,wav,mp3,flac,aac,mov,matroska,webm,caf,aiff,amr"],
];

/** Any audio ffmpeg reads to what Telegram and Discord play as a voice message (OGG/Opus, mono, 48 kHz), in one run
 * that also writes a low-rate level track from which the note's length and waveform are read. */
export async function encodeVoiceNote(
  source: string,
  dest: string,
  limits: { timeoutSeconds: number; signal: AbortSignal; maxSeconds: number },
): Promise<Omit<VoiceNote, "path">> {
  const levels = await runCommand({
    argv: [
      ...FFMPEG_READ,
      ...["-i", source, "-t", String(limits.maxSeconds)],
      ...["-map", "0:a:0", "-ac", "1", "-ar", "48000", "-c:a", "libopus", "-b:a", "32k", "-application", "voip"],
      ...["-f", "ogg", dest],
      ...["-map", "0:a:0", "-ac", "1", "-ar", String(LEVEL_RATE), "-f", "s16le", "pipe:1"],
    ],
    timeoutSeconds: limits.timeoutSeconds,
    signal: limits.signal,
    maxBufferBytes: (limits.maxSeconds + 1) * LEVEL_RATE * 2,
    cwd: "/",
  });
  const samples = new Int16Array(levels.buffer, levels.byteOffset, Math.floor(levels.length / 2));
  if (samples.length === 0) throw new Error("ffmpeg found no audio in what the speech engine wrote");
  return { seconds: Math.max(1, Math.round(samples.length / LEVEL_RATE)), waveform: waveformOf(samples) };
}

/** Up to WAVEFORM_BARS peak levels, 0–255 each, as base64 (Discord's voice message `waveform`). */
export function waveformOf(samples: Int16Array): string {
  const bars = Math.min(WAVEFORM_BARS, samples.length);
  const levels = new Uint8Array(bars);
  for (let bar = 0; bar < bars; bar++) {
    const from = Math.floor((bar * samples.length) / bars);
    const to = Math.floor(((bar + 1) * samples.length) / bars);
    let peak = 0;
    for (let i = from; i < to; i++) peak = Math.max(peak, Math.abs(samples[i]));
    levels[bar] = Math.min(255, Math.round((peak / 32768) * 255));
  }
  return Buffer.from(levels).toString("base64");
}
