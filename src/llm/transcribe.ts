import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { boundedCall } from "./bounded-call.js";
import { isPermanentFailure } from "./failure.js";
import { ModelError, type ModelOptions, openAIClient } from "./model.js";

/** The endpoint's own limit for one transcription upload. */
const MAX_TRANSCRIPTION_BYTES = 25 * 1024 * 1024;

/** Voice notes to text through the same endpoint (`/audio/transcriptions`); failures throw a reason fit for the user. */
export function createTranscriber(options: Pick<ModelOptions, "apiKey" | "baseUrl" | "model" | "timeoutSeconds">) {
  let made: Awaited<ReturnType<typeof openAIClient>> | undefined;
  const bounds = { timeoutMs: options.timeoutSeconds * 1000, retries: 1, who: "the transcription endpoint" };
  return async (path: string, signal?: AbortSignal) => {
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
