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
      const run = (argv: string[], maxBufferBytes: number) =>
        runCommand({ argv, timeoutSeconds, signal: bounded, maxBufferBytes, cwd: work });
      const wav = join(work, "in.wav");
      const toWav = ["-t", String(settings.maxSeconds), "-ac", "1", "-ar", "16000", "-c:a", "pcm_s16le", "-f", "wav"];
      await run([...FFMPEG_READ, "-i", path, ...toWav, wav], 64 * 1024);
      return (await run(substitute(settings.command, { in: wav }), MAX_TRANSCRIPT_BYTES))
        .toString("utf8")
        .replace(/[\p{Cc}\p{Cf}]/gu, (c) => (c === "\n" ? c : " "))
        .trim();
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  };
}
