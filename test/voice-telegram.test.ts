import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { ChatRequest } from "./fakes/openai-server.js";
import type { SentMessage } from "./fakes/telegram-server.js";
import { tempHome } from "./helpers/app.js";
import { audioFacts, hasSpeechPackages, spokenNote } from "./helpers/audio.js";
import { atRest, gatewayOnFakes, killHard, pincer, USER } from "./helpers/daemon.js";
import { findBinary } from "./helpers/system-packages.js";

/**
 * Spoken replies on Telegram with the built daemon, real grammy against the fake Bot API, and the real espeak-ng,
 * ffmpeg and pocketsphinx: a voice note answered with a voice note (decoded back and measured) and its text, /voice
 * per chat, a broken, hanging or missing step still answering in text, and kill -9 in the middle of sending a note.
 */
const ready = hasSpeechPackages({ stt: true });
const fakes = gatewayOnFakes();
const { model, gateway, say, until } = fakes;

const ESPEAK = ["espeak-ng", "-v", "en", "-w", "{out}", "--stdin"];
const POCKETSPHINX = ["pocketsphinx_continuous", "-infile", "{in}", "-logfn", "/dev/null"];

function homeWith(voice: object): string {
  const home = tempHome("pincer-voice-");
  const delivery = { retryMinSeconds: 0.05, retryMaxSeconds: 0.5 };
  writeFileSync(join(home, "config.json"), JSON.stringify({ voice, delivery }));
  return home;
}

/** A voice note from the user, as Telegram delivers one: the OGG/Opus file behind a file_id. */
function sendVoiceNote(bytes: Buffer, seconds = 2): void {
  const file = fakes.telegram.addFile(bytes, { fileName: "voice.ogg" });
  fakes.telegram.pushUpdate({
    message: {
      message_id: 0,
      date: 0,
      chat: { id: USER, type: "private", first_name: "Ada" },
      from: { id: USER, is_bot: false, first_name: "Ada" },
      voice: { ...file, duration: seconds, mime_type: "audio/ogg" },
    },
  });
}

const lastUser = (request: ChatRequest) => String(request.messages.filter((m) => m.role === "user").at(-1)?.content);
const voices = () => fakes.telegram.sent.filter((m) => m.method === "sendVoice");

function expectRealNote(sent: SentMessage, minSeconds: number, maxSeconds: number) {
  const facts = audioFacts(sent.file?.data ?? Buffer.alloc(0));
  expect(facts).toMatchObject({ format: "ogg", codec: "opus" });
  expect(facts.seconds).toBeGreaterThan(minSeconds);
  expect(facts.seconds).toBeLessThan(maxSeconds);
  expect(facts.peak).toBeGreaterThan(0.1);
  expect(Math.abs((sent.duration ?? 0) - facts.seconds)).toBeLessThanOrEqual(1);
}

describe.runIf(ready)("spoken replies on Telegram (built daemon, real speech programs)", () => {
  it("a voice note, heard by pocketsphinx on this machine, is answered with a real OGG/Opus voice note and its text", async () => {
    const home = homeWith({ replies: "auto", tts: { command: ESPEAK }, stt: { command: POCKETSPHINX } });
    const answer = "Sure. I will see you tomorrow at nine, by the station.";
    model.respond(() => ({ content: answer }));
    gateway(home);
    sendVoiceNote(spokenNote("see you tomorrow"));
    const [note] = await until(() => (voices().length ? voices() : undefined), "the voice reply", 60_000);
    // The model saw the words pocketsphinx heard; the endpoint was never asked to transcribe.
    expect(lastUser(model.requests[0])).toMatch(
      /\[voice note, transcribed; the audio is at .+\.ogg\]\nsee you tomorrow/,
    );
    expect(model.transcriptions).toEqual([]);
    expect(note.text).toBe(answer);
    expectRealNote(note, 2, 10);
    expect(fakes.telegram.sent).toHaveLength(1);
    // A written message in auto mode is answered in writing.
    say("and in writing?");
    await until(() => fakes.telegram.sent.length === 2, "the written answer", 30_000);
    expect(fakes.telegram.sent[1]).toMatchObject({ method: "sendMessage", text: answer });
  }, 120_000);

  it("/voice on speaks every answer, a long one up to the limit beside its text; /voice off goes back to text", async () => {
    const home = homeWith({ tts: { command: ESPEAK }, maxSpokenChars: 120 });
    const long = `${"This answer goes on for a while. ".repeat(40)}\n\n\`\`\`sh\nls -la\n\`\`\``;
    model.respond((request) => ({ content: lastUser(request).includes("long") ? long : "Short and spoken." }));
    const daemon = gateway(home);
    say("/voice on");
    await until(() => fakes.telegram.sent[0], "the /voice answer", 30_000);
    expect(fakes.telegram.sent[0].text).toMatch(
      /^Spoken replies in this chat: on, so every answer comes as a voice note/,
    );
    say("hello");
    const [short] = await until(() => (voices().length ? voices() : undefined), "the spoken short answer", 60_000);
    expect(short.text).toBe("Short and spoken.");
    expectRealNote(short, 0.5, 5);
    say("something long");
    await until(() => voices().length === 2, "the spoken long answer", 60_000);
    const afterLong = fakes.telegram.sent.slice(2);
    // The text first (in parts under Telegram's limit), then the note without a caption.
    expect(afterLong.at(-1)).toMatchObject({ method: "sendVoice", text: "" });
    expect(afterLong.slice(0, -1).map((m) => m.method)).toEqual(["sendMessage"]);
    expect(afterLong[0].text).toContain("This answer goes on for a while.");
    expectRealNote(afterLong.at(-1) as SentMessage, 3, 20);
    // The setting outlives a restart.
    await killHard(daemon);
    gateway(home);
    say("/voice off");
    await until(() => fakes.telegram.sent.some((m) => /^Spoken replies in this chat: off/.test(m.text)), "/voice off");
    const before = fakes.telegram.sent.length;
    say("hello again");
    await until(() => fakes.telegram.sent.length === before + 1, "the written answer", 30_000);
    expect(fakes.telegram.sent.at(-1)).toMatchObject({ method: "sendMessage", text: "Short and spoken." });
    expect(voices()).toHaveLength(2);
  }, 150_000);

  it("a broken engine, a hanging one and a missing ffmpeg each still deliver the text within the turn's time", async () => {
    model.respond(() => ({ content: "Here is the answer." }));
    const dir = tempHome("pincer-engines-");
    const hang = join(dir, "hang.sh");
    writeFileSync(hang, "#!/bin/sh\nsleep 600\n", { mode: 0o755 });
    const cases: Array<{ name: string; voice: object; env?: Record<string, string>; withinMs: number }> = [
      { name: "broken", voice: { replies: "always", tts: { command: ["false", "{out}"] } }, withinMs: 15_000 },
      {
        name: "hanging",
        voice: { replies: "always", tts: { command: [hang, "{out}"] }, timeoutSeconds: 3 },
        withinMs: 15_000,
      },
    ];
    // A PATH with espeak-ng and no ffmpeg.
    const bin = join(dir, "bin");
    mkdirSync(bin);
    symlinkSync(findBinary("espeak-ng") ?? "", join(bin, "espeak-ng"));
    cases.push({
      name: "no ffmpeg",
      voice: { replies: "always", tts: { command: ESPEAK } },
      env: { PATH: bin },
      withinMs: 15_000,
    });
    for (const test of cases) {
      const home = homeWith(test.voice);
      const daemon = gateway(home, test.env);
      const before = fakes.telegram.sent.length;
      const asked = Date.now();
      say(`try ${test.name}`);
      await until(() => fakes.telegram.sent.length > before, `the text answer with a ${test.name} engine`, 30_000);
      expect(Date.now() - asked, test.name).toBeLessThan(test.withinMs);
      expect(fakes.telegram.sent.at(-1)).toMatchObject({ method: "sendMessage", text: "Here is the answer." });
      if (test.name === "no ffmpeg") {
        const sentence = "spoken replies stay text: ffmpeg is not installed (Debian: apt install ffmpeg).";
        expect(daemon.output.join("")).toContain(`Voice: ${sentence}`);
        const env = { PATH: bin, OPENAI_API_KEY: "test", OPENAI_BASE_URL: model.url, PINCER_SANDBOX: "none" };
        const doctor = await pincer(["doctor"], home, env);
        expect(doctor.stdout).toContain(`[warn] voice: ${sentence}`);
      }
      await killHard(daemon);
    }
    expect(voices()).toEqual([]);
  }, 120_000);

  it("kill -9 while a voice note is being sent: after the restart it arrives once, with its text", async () => {
    const home = homeWith({ replies: "always", tts: { command: ESPEAK } });
    model.respond(() => ({ content: "Spoken once, and only once." }));
    const first = gateway(home);
    const held = fakes.telegram.holdCall("sendVoice", 1);
    say("speak to me");
    await held.arrived;
    await killHard(first);
    await held.clientGone;
    held.release();
    expect(voices()).toEqual([]);
    gateway(home);
    await until(() => voices().length === 1, "the voice note after the restart", 30_000);
    await until(() => atRest(home), "nothing left to send");
    expect(fakes.telegram.sent.map((m) => [m.method, m.text])).toEqual([["sendVoice", "Spoken once, and only once."]]);
    expectRealNote(voices()[0], 0.5, 6);
    // The turn was finished before the crash: the model was asked once.
    expect(model.requests).toHaveLength(1);
  }, 90_000);
});
