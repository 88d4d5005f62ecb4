import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { audioSeconds } from "./audio-seconds.js";
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
