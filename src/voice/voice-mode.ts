import { mediaKind } from "../bus/media-kind.js";
import type { InboundMessage } from "../bus/types.js";
import type { VoiceMode } from "../store/store.js";

/** Whether the answer to `msg` is spoken: always, or (auto) when it answers a voice note or another recording. */
export function speaksTo(mode: VoiceMode, msg: InboundMessage): boolean {
  if (msg.channel === "system" || mode === "off") return false;
  return mode === "always" || msg.media.some((path) => mediaKind(path) === "audio");
}

/** `/voice on|off|auto` as the mode it sets; undefined for anything else (the answer then says what there is). */
export function parseVoiceArgument(argument: string): VoiceMode | undefined {
  const word = argument.trim().toLowerCase();
  if (word === "on" || word === "always") return "always";
  if (word === "off" || word === "auto") return word;
}

const MEANING: Record<VoiceMode, string> = {
  always: "every answer comes as a voice note with its text",
  auto: "a voice note is answered with a voice note and its text, a written message with text",
  off: "answers come as text",
};

/** What `/voice` answers: the chat's mode now (and whether it is the config's default), or the mode just set. */
export function voiceAnswer(
  { mode, chosen, set }: { mode: VoiceMode; chosen: boolean; set?: boolean },
  problem: string | undefined,
): string {
  const head = set
    ? `Spoken replies in this chat: ${mode === "always" ? "on" : mode}, so ${MEANING[mode]}.`
    : `Spoken replies in this chat: ${mode === "always" ? "on" : mode}${chosen ? "" : " (the default)"}: ${MEANING[mode]}. /voice on, /voice off or /voice auto changes it.`;
  return mode !== "off" && problem ? `${head} But for now they stay text: ${problem}` : head;
}
