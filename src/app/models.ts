import type { Config } from "../config/config.js";
import { ContextLimits } from "../llm/context-limits.js";
import { createTranscriber, type Heard } from "../llm/transcribe.js";
import { contextLimitsPath, mediaDir } from "../paths.js";
import { guardedForRun } from "../scheduler/run-guard.js";
import { UsageMeter } from "../usage/meter.js";
import { transcriptionProblem } from "../voice/problems.js";
import { createCommandTranscriber } from "../voice/transcribe-command.js";
import { VoiceReplies } from "../voice/voice-replies.js";
import type { Core } from "./core.js";
import type { AppOptions } from "./options.js";

export type Models = ReturnType<typeof buildModels>;

/** What every agent's models share: the endpoints' learned context, usage, transcription and voice. */
export function buildModels(config: Config, options: AppOptions, { log, store, tokens }: Core) {
  const limits = new ContextLimits(contextLimitsPath(config.home), log.child({ part: "model" }));
  const usage = new UsageMeter({ config, store: store.usage, tokens, log, now: options.now });
  const turnUsage: Pick<UsageMeter, "wrap" | "report" | "checkBefore"> = {
    // A scheduled run's calls stop at its job's caps (per run, per day) before the budgets are asked.
    wrap: (model, run) => usage.wrap(guardedForRun(model, run, { store, defaults: config.cron }), run),
    report: (...args) => usage.report(...args),
    checkBefore: (run) => usage.checkBefore(run),
  };
  // voice.stt, when set, hears voice notes on this machine instead of the endpoint: the audio never leaves.
  const { stt } = config.voice;
  const transcribe: (path: string, signal?: AbortSignal, onHeard?: (heard: Heard) => void) => Promise<string> = stt
    ? createCommandTranscriber({
        command: stt.command,
        timeoutSeconds: config.voice.timeoutSeconds,
        maxSeconds: config.media.maxAudioSeconds,
      })
    : createTranscriber({
        ...config.openai,
        model: config.agent.transcriptionModel,
        timeoutSeconds: config.agent.modelTimeoutSeconds,
      });
  const voice = new VoiceReplies({
    settings: config.voice,
    openai: config.openai,
    mediaDir: mediaDir(config.home),
    modes: store.chatVoice,
    log: log.child({ part: "voice" }),
  });
  if (voice.inUse && voice.problem) log.warn(`Voice: ${voice.problem}`);
  const unheard = transcriptionProblem(config.voice);
  if (unheard) log.warn(`Voice: ${unheard}`);
  return { limits, usage, turnUsage, transcribe, voice };
}
