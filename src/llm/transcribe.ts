import { createReadStream } from "node:fs";
import { open, stat } from "node:fs/promises";
import { boundedCall } from "./bounded-call.js";
import { isPermanentFailure } from "./failure.js";
import { ModelError, type ModelOptions, openAIClient } from "./model.js";

/** The endpoint's own limit for one transcription upload. */
const MAX_TRANSCRIPTION_BYTES = 25 * 1024 * 1024;

/** What one transcription used: the endpoint's token counts when it says, else the recording's length. */
export type Heard = { model: string; text: string; seconds: number; promptTokens?: number; completionTokens?: number };

/** Voice notes to text through the same endpoint (`/audio/transcriptions`); failures throw a reason fit for the user.
 * `onHeard` hears what each transcription used, for the budgets. */
export function createTranscriber(options: Pick<ModelOptions, "apiKey" | "baseUrl" | "model" | "timeoutSeconds">) {
  let made: Awaited<ReturnType<typeof openAIClient>> | undefined;
  const bounds = { timeoutMs: options.timeoutSeconds * 1000, retries: 1, who: "the transcription endpoint" };
  return async (path: string, signal?: AbortSignal, onHeard?: (heard: Heard) => void) => {
    const { size } = await stat(path);
    if (size > MAX_TRANSCRIPTION_BYTES) throw new Error("the recording is larger than the 25 MB transcription limit");
    made ??= await openAIClient(options);
    const { OpenAI, client } = made;
    return boundedCall(bounds, signal, async (bounded) => {
      try {
        const result = await client.audio.transcriptions.create(
          { file: createReadStream(path), model: options.model },
          { signal: bounded },
        );
        onHeard?.({ model: options.model, text: result.text, ...(await usageOf(result, path)) });
        return result.text;
      } catch (err) {
        if (err instanceof OpenAI.APIError && err.status) {
          const permanent = isPermanentFailure(err.status, err.message);
          throw new ModelError(`the transcription endpoint answered ${err.status}`, permanent, err.status);
        }
        if (err instanceof OpenAI.APIConnectionError)
          throw new ModelError("the transcription endpoint could not be reached");
        throw new ModelError((err as Error).message, true);
      }
    });
  };
}

/** The endpoint's `usage` (tokens, as gpt-4o-transcribe reports; or seconds, as whisper-1), else the file's length. */
async function usageOf(result: unknown, path: string): Promise<Omit<Heard, "model" | "text">> {
  const usage = (result as { usage?: Record<string, unknown> }).usage ?? {};
  const count = (value: unknown) => (typeof value === "number" && value >= 0 && value < 1e8 ? value : undefined);
  const [input, output, seconds] = [count(usage.input_tokens), count(usage.output_tokens), count(usage.seconds)];
  if (input !== undefined) return { seconds: seconds ?? 0, promptTokens: input, completionTokens: output ?? 0 };
  return { seconds: seconds ?? (await audioSeconds(path)) };
}

/** Bytes a second of compressed voice takes at the least (32 kbit/s): what an unknown format's length is guessed at,
 * on the long side, so a budget is never undercounted by much. */
const GUESSED_BYTES_PER_SECOND = 4000;
const TAIL_BYTES = 65_536;

/** How long a recording plays, for counting its transcription: exact for Ogg/Opus (voice notes) and WAV, read from
 * the file's own header and last page; any other format guessed from its size. */
export async function audioSeconds(path: string): Promise<number> {
  const file = await open(path, "r");
  try {
    const { size } = await file.stat();
    const head = Buffer.alloc(Math.min(size, 512));
    await file.read(head, 0, head.length, 0);
    if (head.toString("latin1", 0, 4) === "RIFF" && head.toString("latin1", 8, 12) === "WAVE" && head.length >= 32) {
      const byteRate = head.readUInt32LE(28);
      if (byteRate > 0) return Math.max(0, size - 44) / byteRate;
    }
    const opus = head.indexOf("OpusHead", 0, "latin1");
    if (head.toString("latin1", 0, 4) === "OggS" && opus >= 0 && opus + 12 <= head.length) {
      const tail = Buffer.alloc(Math.min(size, TAIL_BYTES));
      await file.read(tail, 0, tail.length, size - tail.length);
      const last = tail.lastIndexOf("OggS", tail.length, "latin1");
      if (last >= 0 && last + 14 <= tail.length) {
        // The last page's granule position counts 48 kHz samples, the encoder's pre-skip included.
        const samples = Number(tail.readBigInt64LE(last + 6)) - head.readUInt16LE(opus + 10);
        if (samples >= 0) return samples / 48_000;
      }
    }
    return size / GUESSED_BYTES_PER_SECOND;
  } finally {
    await file.close();
  }
}
