import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { InboundMessage, OutboundMessage } from "../src/bus/types.js";
import type { Config } from "../src/config/config.js";
import type { VoiceMode } from "../src/store/store.js";
import { voiceCheck, voiceProblem } from "../src/voice/problems.js";
import { SAID, speakableText } from "../src/voice/speakable.js";
import { createCommandTranscriber } from "../src/voice/transcribe-command.js";
import { VoiceReplies } from "../src/voice/voice-replies.js";
import { type FakeOpenAI, startFakeOpenAI } from "./fakes/openai-server.js";
import { tempHome } from "./helpers/app.js";
import { audioFacts, hasSpeechPackages, spokenNote } from "./helpers/audio.js";

/**
 * The speech steps with the real programs: espeak-ng and the endpoint's /v1/audio/speech as engines, ffmpeg making the
 * OGG/Opus note (decoded back and measured), pocketsphinx as the local transcription command; and how each step holds
 * against hostile text, a broken, hanging or missing program, and many replies at once.
 */
const ready = hasSpeechPackages({ stt: true });
const log = pino({ level: "silent" });

type Settings = Config["voice"];
const base: Settings = {
  replies: "always",
  maxSpokenChars: 1500,
  timeoutSeconds: 20,
  maxConcurrentEncodes: 2,
  maxAudioBytes: 20 * 1024 * 1024,
};
const ESPEAK = ["espeak-ng", "-v", "{language}", "-w", "{out}", "--stdin"];

function modes(initial: Record<string, VoiceMode> = {}) {
  const chosen = new Map(Object.entries(initial));
  return {
    get: async (key: string) => chosen.get(key),
    set: async (key: string, mode: VoiceMode) => void chosen.set(key, mode),
  } as unknown as ConstructorParameters<typeof VoiceReplies>[0]["modes"];
}

function voiceOf(settings: Partial<Settings>, extra: { searchPath?: string; baseUrl?: string } = {}) {
  const home = tempHome("pincer-voice-");
  return new VoiceReplies({
    settings: { ...base, ...settings },
    openai: { apiKey: "test", baseUrl: extra.baseUrl ?? "http://127.0.0.1:9/v1" },
    mediaDir: join(home, "media"),
    modes: modes(),
    log,
    searchPath: extra.searchPath,
  });
}

const inbound = (text = "hi"): InboundMessage => ({
  id: "1",
  channel: "telegram",
  chatId: "42",
  senderId: "42",
  senderName: "Ada",
  text,
  media: [],
  isGroup: false,
  mentionsBot: false,
  receivedAt: Date.now(),
  sessionKey: "telegram:42",
});
const reply = (text: string): OutboundMessage => ({ channel: "telegram", chatId: "42", text, kind: "reply" });
const never = new AbortController().signal;

/** A stand-in engine (node running a script): records its arguments, environment, stdin and pid, then acts. */
function scriptEngine(dir: string, act: "copy" | "fail" | "hang", sample?: string): string[] {
  const script = join(dir, "engine.mjs");
  writeFileSync(
    script,
    `import { readFileSync, writeFileSync, copyFileSync, appendFileSync } from "node:fs";
const input = readFileSync(0, "utf8");
const dir = ${JSON.stringify(dir)};
writeFileSync(dir + "/argv.json", JSON.stringify(process.argv.slice(2)));
writeFileSync(dir + "/env.json", JSON.stringify(process.env));
writeFileSync(dir + "/stdin.txt", input);
writeFileSync(dir + "/pid", String(process.pid));
appendFileSync(dir + "/spans", Date.now() + " start\\n");
if (${JSON.stringify(act)} === "fail") { console.error("no voice called nobody"); process.exit(3); }
if (${JSON.stringify(act)} === "hang") setInterval(() => {}, 1000);
else { copyFileSync(${JSON.stringify(sample ?? "")}, process.argv[2]); appendFileSync(dir + "/spans", Date.now() + " end\\n"); }
`,
  );
  return [process.execPath, script, "{out}"];
}

describe.runIf(ready)("voice steps with real espeak-ng, ffmpeg and pocketsphinx", () => {
  let model: FakeOpenAI;
  let sample: string;
  beforeAll(async () => {
    model = await startFakeOpenAI();
    sample = join(tempHome("pincer-sample-"), "sample.ogg");
    writeFileSync(sample, spokenNote("This is a sample of speech."));
  });
  afterAll(() => model?.close());

  it("espeak-ng's speech becomes a real OGG/Opus voice note: non-silent, of a plausible length, its length told", async () => {
    const voice = voiceOf({ tts: { command: ESPEAK, language: "en" } });
    const text = "Good morning. The kettle is on, and the post has come.";
    const dressed = await voice.dress(inbound(), reply(text), never);
    expect(dressed.text).toBe(text);
    const note = dressed.voice;
    expect(note?.path).toMatch(/media\/telegram_42\/voice-reply-.+\.ogg$/);
    const facts = audioFacts(readFileSync(note?.path ?? ""));
    expect(facts).toMatchObject({ format: "ogg", codec: "opus" });
    expect(facts.seconds).toBeGreaterThan(2);
    expect(facts.seconds).toBeLessThan(8);
    expect(facts.peak).toBeGreaterThan(0.1);
    expect(facts.rms).toBeGreaterThan(0.01);
    expect(Math.abs((note?.seconds ?? 0) - facts.seconds)).toBeLessThanOrEqual(1);
    expect(Buffer.from(note?.waveform ?? "", "base64").length).toBe(256);
  });

  it("the endpoint's /v1/audio/speech through the openai client, its audio re-encoded to OGG/Opus", async () => {
    const voice = voiceOf({ tts: { model: "tts-1", voice: "nova", speed: 1.25 } }, { baseUrl: model.url });
    const dressed = await voice.dress(inbound(), reply("Read me, please: `x = 1`."), never);
    expect(model.speech.at(-1)).toMatchObject({
      model: "tts-1",
      voice: "nova",
      speed: 1.25,
      input: "Read me, please: x = 1.",
    });
    const facts = audioFacts(readFileSync(dressed.voice?.path ?? ""));
    expect(facts).toMatchObject({ format: "ogg", codec: "opus" });
    expect(facts.seconds).toBeCloseTo(1, 0);
    expect(facts.peak).toBeGreaterThan(0.2);
  });

  it("hostile text reaches the engine on stdin as data only: fixed arguments, no secrets, nothing run", async () => {
    const dir = tempHome("pincer-hostile-");
    process.env.PINCER_TEST_SECRET = "do-not-leak";
    const marker = join(dir, "pwned");
    const hostile = [
      `$(touch ${marker}) \`touch ${marker}\`; touch ${marker} && echo | sh -c 'touch ${marker}' > /dev/null`,
      "\u0000\u0007\u001b[2J\u202Eevil\u202C \u200F\u05E9\u05DC\u05D5\u05DD\u200E {out} {in} %s %n",
      "word ".repeat(20_000),
    ].join("\n");
    expect(hostile.length).toBeGreaterThan(100_000);
    const command = scriptEngine(dir, "copy", sample);
    const voice = voiceOf({ tts: { command } });
    const dressed = await voice.dress(inbound(), reply(hostile), never);
    delete process.env.PINCER_TEST_SECRET;
    expect(dressed.voice).toBeDefined();
    const argv = JSON.parse(readFileSync(join(dir, "argv.json"), "utf8")) as string[];
    expect(argv).toHaveLength(1);
    expect(argv[0]).toMatch(/^\/.+\/spoken$/);
    const env = JSON.parse(readFileSync(join(dir, "env.json"), "utf8")) as Record<string, string>;
    expect(Object.keys(env).filter((k) => !["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR"].includes(k))).toEqual([]);
    expect(JSON.stringify(env)).not.toContain("do-not-leak");
    const stdin = readFileSync(join(dir, "stdin.txt"), "utf8");
    expect(stdin).toBe(speakableText(hostile, base.maxSpokenChars));
    expect(stdin).toContain(`$(touch ${marker})`);
    expect(stdin).toContain("{out} {in} %s %n");
    expect(stdin).toContain("\u05E9\u05DC\u05D5\u05DD");
    // Control and direction characters are not spoken: none reaches the engine (line breaks do).
    const unspoken = [...stdin].filter((c) => c !== "\n" && /[\p{Cc}\p{Cf}]/u.test(c));
    expect(unspoken).toEqual([]);
    expect(stdin.endsWith(SAID.rest)).toBe(true);
    expect(existsSync(marker)).toBe(false);
  });

  it("a broken engine and a hanging one leave the reply as text within the time allowed; the hung one is killed", async () => {
    const broken = tempHome("pincer-broken-");
    const failed = await voiceOf({ tts: { command: scriptEngine(broken, "fail") } }).dress(
      inbound(),
      reply("Hi."),
      never,
    );
    expect(failed).toEqual(reply("Hi."));

    const hung = tempHome("pincer-hung-");
    const started = Date.now();
    const hanging = voiceOf({ tts: { command: scriptEngine(hung, "hang") }, timeoutSeconds: 2 });
    expect(await hanging.dress(inbound(), reply("Hi."), never)).toEqual(reply("Hi."));
    expect(Date.now() - started).toBeLessThan(4000);
    const pid = Number(readFileSync(join(hung, "pid"), "utf8"));
    expect(() => process.kill(pid, 0)).toThrow(/ESRCH/);
  });

  it("a missing ffmpeg or engine program is one sentence, and the reply stays text", async () => {
    const problem = voiceProblem({ ...base, tts: { command: ["piper", "-f", "{out}"] } }, "/nonexistent");
    expect(problem).toBe("spoken replies stay text: ffmpeg and piper are not installed (Debian: apt install ffmpeg).");
    const voice = voiceOf({ tts: { command: ESPEAK } }, { searchPath: "/nonexistent" });
    expect(voice.problem).toMatch(/ffmpeg and espeak-ng are not installed/);
    expect(await voice.dress(inbound(), reply("Hi."), never)).toEqual(reply("Hi."));
    expect(voiceProblem({ ...base, tts: { command: ESPEAK } })).toBeUndefined();
    // pincer doctor's line: what is missing, or how replies are spoken and voice notes heard.
    const stt = { command: ["/opt/whisper/main", "-f", "{in}"] };
    expect(voiceCheck({ ...base, tts: { command: ESPEAK }, stt })).toEqual({
      status: "warn",
      detail: "voice notes cannot be transcribed: /opt/whisper/main is not installed.",
    });
    expect(
      voiceCheck({ ...base, replies: "auto", stt: { command: ["pocketsphinx_continuous", "-infile", "{in}"] } }),
    ).toEqual({
      status: "ok",
      detail:
        "replies auto (/voice changes a chat's), spoken by the endpoint's gpt-4o-mini-tts; voice notes heard on this machine by pocketsphinx_continuous",
    });
    expect(voiceCheck({ ...base, replies: "off" })).toBeUndefined();
  });

  it("encodes at most maxConcurrentEncodes notes at once; the others wait their turn", async () => {
    const dir = tempHome("pincer-slots-");
    const voice = voiceOf({ tts: { command: scriptEngine(dir, "copy", sample) }, maxConcurrentEncodes: 1 });
    const dressed = await Promise.all([1, 2, 3].map((n) => voice.dress(inbound(), reply(`Reply ${n}.`), never)));
    expect(dressed.every((d) => d.voice)).toBe(true);
    const spans = readFileSync(join(dir, "spans"), "utf8").trim().split("\n");
    // One engine at a time: each start is followed by its end before the next start.
    expect(spans.map((line) => line.split(" ")[1])).toEqual(["start", "end", "start", "end", "start", "end"]);
  });

  it("pocketsphinx as voice.stt: an espeak-ng voice note becomes its words, on this machine", async () => {
    const note = join(tempHome("pincer-stt-"), "voice-1.ogg");
    writeFileSync(note, spokenNote("see you tomorrow"));
    const transcribe = createCommandTranscriber({
      command: ["pocketsphinx_continuous", "-infile", "{in}", "-logfn", "/dev/null"],
      timeoutSeconds: 60,
      maxSeconds: 600,
    });
    expect(await transcribe(note)).toBe("see you tomorrow");
    // A playlist sent as a voice note is not followed to the files it names.
    const playlist = join(tempHome("pincer-stt-"), "voice-2.ogg");
    writeFileSync(playlist, `#EXTM3U\n#EXT-X-MEDIA-SEQUENCE:0\n#EXTINF:10.0,\n${note}\n#EXT-X-ENDLIST\n`);
    await expect(transcribe(playlist)).rejects.toThrow(/^ffmpeg exited with code 1: .*(whitelist|Invalid)/);
    const broken = createCommandTranscriber({ command: ["false", "{in}"], timeoutSeconds: 5, maxSeconds: 60 });
    await expect(broken(note)).rejects.toThrow(/^false exited with code 1$/);
  });
});
