import { stat } from "node:fs/promises";
import { Readable } from "node:stream";
import type { ReadableStream as WebReadableStream } from "node:stream/web";
import { saveCapped, TooLarge } from "../bus/received-file.js";
import type { Config } from "../config/config.js";
import { openAIClient } from "../llm/model.js";
import { runCommand, substitute } from "./run-command.js";

/** Writes the spoken `text` to the file `out`, in any format ffmpeg reads; throws one short sentence when it cannot. */
export type SpeechEngine = (text: string, out: string, signal: AbortSignal) => Promise<void>;

export type VoiceSettings = Config["voice"];

/** The endpoint's speech model and voice when voice.tts names none: what OpenAI serves. */
export const DEFAULT_TTS: NonNullable<VoiceSettings["tts"]> = { model: "gpt-4o-mini-tts", voice: "alloy" };

interface EngineDeps {
  settings: VoiceSettings;
  openai: { apiKey: string; baseUrl: string };
  /** A folder of the call's own, where a command runs. */
  cwd: string;
}

/** voice.tts's engine: a local command (text on stdin, audio to `{out}`), else the endpoint's /v1/audio/speech. */
export function speechEngine({ settings, openai, cwd }: EngineDeps): SpeechEngine {
  const tts = settings.tts ?? DEFAULT_TTS;
  const checkSize = async (out: string) => {
    const { size } = await stat(out).catch(() => ({ size: -1 }));
    if (size <= 0) throw new Error("the speech engine wrote no audio");
    if (size > settings.maxAudioBytes)
      throw new Error(`the speech engine wrote more than ${settings.maxAudioBytes} bytes`);
  };
  if (tts.command) {
    const command = tts.command;
    return async (text, out, signal) => {
      const values = { out, voice: tts.voice ?? "", language: tts.language ?? "", speed: String(tts.speed ?? 1) };
      await runCommand({
        argv: substitute(command, values),
        input: text,
        timeoutSeconds: settings.timeoutSeconds,
        signal,
        maxBufferBytes: 1 << 20,
        cwd,
      });
      await checkSize(out);
    };
  }
  let made: Awaited<ReturnType<typeof openAIClient>> | undefined;
  return async (text, out, signal) => {
    made ??= await openAIClient({ ...openai, timeoutSeconds: settings.timeoutSeconds });
    const { client, OpenAI } = made;
    try {
      const response = await client.audio.speech.create(
        {
          model: tts.model ?? "gpt-4o-mini-tts",
          voice: tts.voice ?? "alloy",
          input: text,
          response_format: "opus",
          ...(tts.speed !== undefined ? { speed: tts.speed } : {}),
          ...(tts.language ? { instructions: `Speak in this language: ${tts.language}.` } : {}),
        },
        { signal },
      );
      if (!response.body) throw new Error("the speech endpoint sent no audio");
      await saveCapped(Readable.fromWeb(response.body as WebReadableStream<Uint8Array>), out, settings.maxAudioBytes);
    } catch (err) {
      if (err instanceof TooLarge)
        throw new Error(`the speech endpoint sent more than ${settings.maxAudioBytes} bytes`);
      if (err instanceof OpenAI.APIError && err.status) throw new Error(`the speech endpoint answered ${err.status}`);
      if (err instanceof OpenAI.APIConnectionError) throw new Error("the speech endpoint could not be reached");
      throw err;
    }
    await checkSize(out);
  };
}
