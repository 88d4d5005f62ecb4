import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Logger } from "pino";
import { commandArgument } from "../bus/commands.js";
import { conversationMediaDir, errorText, type InboundMessage, type OutboundMessage } from "../bus/types.js";
import { Slots } from "../slots.js";
import type { Store } from "../store/store.js";
import { encodeVoiceNote } from "./encode.js";
import { type SpeechEngine, speechEngine, type VoiceSettings } from "./engines.js";
import { voiceProblem } from "./problems.js";
import { speakableText } from "./speakable.js";
import { parseVoiceArgument, speaksTo, voiceAnswer } from "./voice-mode.js";

/** Speech engines and ffmpeg write, and are given, at most this many seconds of one note. */
const MAX_NOTE_SECONDS = 900;

export interface VoiceDeps {
  settings: VoiceSettings;
  openai: { apiKey: string; baseUrl: string };
  mediaDir: string;
  modes: Store["chatVoice"];
  log: Logger;
  /** Where programs are looked for (default: PATH). */
  searchPath?: string;
}

/** Spoken replies: each chat's `/voice` mode, and a reply's voice note made within bounds (time, size, encodes at once);
 * any failure leaves the reply as it was, so the text always goes out. */
export class VoiceReplies {
  private readonly slots: Slots;
  private readonly engine: SpeechEngine;
  /** Set at start: ffmpeg or the engine's program is missing (told once then, and by `pincer doctor`). */
  readonly problem: string | undefined;

  constructor(private readonly deps: VoiceDeps) {
    this.slots = new Slots(deps.settings.maxConcurrentEncodes);
    this.engine = speechEngine({ settings: deps.settings, openai: deps.openai, cwd: tmpdir() });
    this.problem = voiceProblem(deps.settings, deps.searchPath);
  }

  /** Whether anything may be spoken at all: the config's default, or a chat's /voice (set up or not). */
  get inUse(): boolean {
    return this.deps.settings.replies !== "off" || this.deps.settings.tts !== undefined;
  }

  /** The reply to `msg`, with its voice note when the chat's mode asks for one and it could be made; else as it was. */
  async dress(msg: InboundMessage, reply: OutboundMessage, signal: AbortSignal): Promise<OutboundMessage> {
    const { settings, log } = this.deps;
    const about = { session: msg.sessionKey };
    try {
      const mode = (await this.deps.modes.get(msg.sessionKey)) ?? settings.replies;
      if (!speaksTo(mode, msg)) return reply;
      if (this.problem) {
        log.warn(about, `a reply goes as text: ${this.problem}`);
        return reply;
      }
      const text = speakableText(reply.text, settings.maxSpokenChars);
      if (!text) return reply;
      const started = performance.now();
      const voice = await this.speak(text, msg.sessionKey, signal);
      log.info({ ...about, seconds: voice.seconds, ms: Math.round(performance.now() - started) }, "spoke a reply");
      return { ...reply, voice };
    } catch (err) {
      log.warn({ ...about, err: errorText(err) }, "could not speak a reply; it goes as text");
      return reply;
    }
  }

  /** `/voice`, `/voice on|off|auto`: says the chat's mode, or sets it. */
  async answer(msg: InboundMessage): Promise<string> {
    const argument = commandArgument(msg.text);
    const wanted = parseVoiceArgument(argument);
    if (wanted) {
      await this.deps.modes.set(msg.sessionKey, wanted, msg.senderId);
      return voiceAnswer({ mode: wanted, chosen: true, set: true }, this.problem);
    }
    const chosen = await this.deps.modes.get(msg.sessionKey);
    const now = voiceAnswer({ mode: chosen ?? this.deps.settings.replies, chosen: chosen !== undefined }, this.problem);
    return argument ? `"${argument.slice(0, 40)}" is not a voice mode. ${now}` : now;
  }

  /** The engine, then ffmpeg, in a folder of the call's own, all within voice.timeoutSeconds (waiting included). */
  private async speak(text: string, sessionKey: string, turn: AbortSignal) {
    const { settings, mediaDir } = this.deps;
    const signal = AbortSignal.any([turn, AbortSignal.timeout(settings.timeoutSeconds * 1000)]);
    const release = await this.slots.acquire(signal);
    const work = await mkdtemp(join(tmpdir(), "pincer-voice-"));
    try {
      const raw = join(work, "spoken");
      await this.engine(text, raw, signal);
      const dir = conversationMediaDir(mediaDir, sessionKey);
      await mkdir(dir, { recursive: true });
      const path = join(dir, `voice-reply-${Date.now()}-${randomBytes(4).toString("hex")}.ogg`);
      const limits = { timeoutSeconds: settings.timeoutSeconds, signal, maxSeconds: MAX_NOTE_SECONDS };
      return { path, ...(await encodeVoiceNote(raw, path, limits)) };
    } finally {
      release();
      await rm(work, { recursive: true, force: true });
    }
  }
}
