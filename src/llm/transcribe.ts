import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import type OpenAI from "openai";
import { loadOpenAI } from "./model.js";

/** The endpoint's own limit for one transcription upload. */
export const MAX_TRANSCRIPTION_BYTES = 25 * 1024 * 1024;

export interface TranscriberOptions {
  apiKey: string;
  baseUrl: string;
  model: string;
  timeoutSeconds: number;
}

/**
 * Voice notes to text through the same OpenAI-compatible endpoint (`/audio/transcriptions`).
 * Failures throw with a short reason fit for the user.
 */
export function createTranscriber(
  options: TranscriberOptions,
): (path: string, signal?: AbortSignal) => Promise<string> {
  let client: OpenAI | undefined;
  return async (path, signal) => {
    const { size } = await stat(path);
    if (size > MAX_TRANSCRIPTION_BYTES) throw new Error("the recording is larger than the 25 MB transcription limit");
    const OpenAI = await loadOpenAI();
    client ??= new OpenAI({
      apiKey: options.apiKey,
      baseURL: options.baseUrl,
      timeout: options.timeoutSeconds * 1000,
      maxRetries: 1,
    });
    try {
      const result = await client.audio.transcriptions.create(
        { file: createReadStream(path), model: options.model },
        { signal },
      );
      return result.text;
    } catch (err) {
      if (err instanceof OpenAI.APIError && err.status)
        throw new Error(`the transcription endpoint answered ${err.status}`);
      if (err instanceof OpenAI.APIConnectionError) throw new Error("the transcription endpoint could not be reached");
      throw new Error((err as Error).message);
    }
  };
}
