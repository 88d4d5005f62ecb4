import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FFMPEG_READ } from "./encode.js";
import { runCommand, substitute } from "./run-command.js";

/** A transcript longer than this is cut (a command gone wrong must not fill the prompt). */
const MAX_TRANSCRIPT_BYTES = 256 * 1024;

/** Voice notes to text on this machine, the audio never leaving it: ffmpeg makes the 16 kHz mono WAV, the command
 * reads it, each bounded in time and output. Shaped as the endpoint's transcriber: what wraps one wraps either. */
export function createCommandTranscriber(settings: { command: string[]; timeoutSeconds: number; maxSeconds: number }) {
  const { timeoutSeconds } = settings;
  return async (path: string, signal?: AbortSignal): Promise<string> => {
    const limit = AbortSignal.timeout(timeoutSeconds * 1000);
    const bounded = signal ? AbortSignal.any([signal, limit]) : limit;
    const work = await mkdtemp(join(tmpdir(), "pincer-stt-"));
    try {
      const wav = join(work, "in.wav");
      await runCommand({
        argv: [
          ...[...FFMPEG_READ, "-i", path],
          ...["-t", String(settings.maxSeconds), "-ac", "1", "-ar", "16000", "-c:a", "pcm_s16le", "-f", "wav", wav],
        ],
        timeoutSeconds,
        signal: bounded,
        maxBufferBytes: 64 * 1024,
        cwd: work,
      });
      const printed = await runCommand({
        argv: substitute(settings.command, { in: wav }),
        timeoutSeconds,
        signal: bounded,
        maxBufferBytes: MAX_TRANSCRIPT_BYTES,
        cwd: work,
      });
      return printed
        .toString("utf8")
        .replace(/[\p{Cc}\p{Cf}]/gu, (c) => (c === "\n" ? c : " "))
        .trim();
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  };
}
