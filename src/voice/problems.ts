import { basename, dirname, isAbsolute } from "node:path";
import { findExecutable } from "../tools/exec/sandbox-check.js";
import { DEFAULT_TTS, type VoiceSettings } from "./engines.js";

const installed = (program: string, searchPath: string) =>
  isAbsolute(program) ? findExecutable(basename(program), dirname(program)) : findExecutable(program, searchPath);

/** The programs of `needed` not found, as one sentence saying what stays as it is; undefined when all are there. */
function missing(needed: string[], outcome: string, searchPath: string): string | undefined {
  const absent = [...new Set(needed)].filter((program) => !installed(program, searchPath));
  if (absent.length === 0) return undefined;
  const apt = absent.includes("ffmpeg") ? " (Debian: apt install ffmpeg)" : "";
  return `${outcome}: ${absent.join(" and ")} ${absent.length > 1 ? "are" : "is"} not installed${apt}.`;
}

/** What keeps replies from being spoken on this machine (ffmpeg or the engine's program missing), in one sentence. */
export function voiceProblem(settings: VoiceSettings, searchPath = process.env.PATH ?? ""): string | undefined {
  const engine = settings.tts?.command ? [settings.tts.command[0]] : [];
  return missing(["ffmpeg", ...engine], "spoken replies stay text", searchPath);
}

/** What keeps voice.stt from hearing voice notes (ffmpeg or its program missing), in one sentence. */
export function transcriptionProblem(settings: VoiceSettings, searchPath = process.env.PATH ?? ""): string | undefined {
  return settings.stt && missing(["ffmpeg", settings.stt.command[0]], "voice notes cannot be transcribed", searchPath);
}

/** `pincer doctor`'s voice line: how replies are spoken and voice notes heard, or what is missing; none without voice. */
export function voiceCheck(
  settings: VoiceSettings,
  searchPath = process.env.PATH ?? "",
): { status: "ok" | "warn"; detail: string } | undefined {
  const { replies, tts, stt } = settings;
  if (replies === "off" && !tts && !stt) return undefined;
  const problems = [voiceProblem(settings, searchPath), transcriptionProblem(settings, searchPath)].filter(Boolean);
  if (problems.length > 0) return { status: "warn", detail: problems.join(" ") };
  const engine = tts?.command
    ? `${basename(tts.command[0])} on this machine`
    : `the endpoint's ${(tts ?? DEFAULT_TTS).model}`;
  const heard = stt ? `on this machine by ${basename(stt.command[0])}` : "by the endpoint";
  return {
    status: "ok",
    detail: `replies ${replies} (/voice changes a chat's), spoken by ${engine}; voice notes heard ${heard}`,
  };
}
