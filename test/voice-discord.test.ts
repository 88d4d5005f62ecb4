import { afterEach, describe, expect, it } from "vitest";
import type { FakeUser, SentMessage } from "./fakes/discord-server.js";
import { quiet } from "./helpers/app.js";
import { audioFacts, hasSpeechPackages } from "./helpers/audio.js";
import { startDiscordHarness } from "./helpers/discord.js";

/** Spoken replies on Discord: real discord.js against the fake REST + gateway, real espeak-ng and ffmpeg. */
const ready = hasSpeechPackages();
const ALICE: FakeUser = { id: "200000000000000001", username: "alice" };
const DM = "140000000000000001";
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const clean of cleanups.splice(0).reverse()) await clean();
});

const start = (refuseVoiceMessages = false) =>
  startDiscordHarness(cleanups, {
    allowFrom: ALICE.id,
    fake: { refuseVoiceMessages },
    adjust: (config) => {
      config.voice = { ...config.voice, tts: { command: ["espeak-ng", "-v", "en", "-w", "{out}", "--stdin"] } };
    },
  });

function expectRealNote(sent: SentMessage) {
  expect(sent.files).toHaveLength(1);
  const facts = audioFacts(sent.files[0].data ?? Buffer.alloc(0));
  expect(facts).toMatchObject({ format: "ogg", codec: "opus" });
  expect(facts.seconds).toBeGreaterThan(1);
  expect(facts.seconds).toBeLessThan(8);
  expect(facts.peak).toBeGreaterThan(0.1);
}

describe.runIf(ready)("spoken replies on Discord", () => {
  it("/voice on: the text, then a voice message (OGG/Opus with its length and waveform); /voice off: text alone", async () => {
    const { discord, model, app } = await start();
    model.respond(() => ({ content: "The meeting moved to Thursday afternoon." }));
    discord.dispatchMessage({ channelId: DM, author: ALICE, content: "/voice on" });
    await discord.waitFor(() => discord.sent.find((m) => m.content.startsWith("Spoken replies in this chat: on")));
    discord.dispatchMessage({ channelId: DM, author: ALICE, content: "when is the meeting?" });
    const note = await discord.waitFor(() => discord.sent.find((m) => m.flags === 8192), 60_000);
    const text = discord.sent.find((m) => m.content === "The meeting moved to Thursday afternoon.");
    expect(text).toBeDefined();
    expect(discord.sent.indexOf(text as SentMessage)).toBeLessThan(discord.sent.indexOf(note));
    expect(note.content).toBe("");
    expect(note.attachments?.[0]).toMatchObject({ filename: "voice-message.ogg" });
    expect(note.attachments?.[0].duration_secs).toBeGreaterThan(1);
    expect(Buffer.from(note.attachments?.[0].waveform ?? "", "base64").length).toBe(256);
    expectRealNote(note);

    discord.dispatchMessage({ channelId: DM, author: ALICE, content: "/voice off" });
    await discord.waitFor(() => discord.sent.find((m) => m.content.startsWith("Spoken replies in this chat: off")));
    const before = discord.sent.length;
    discord.dispatchMessage({ channelId: DM, author: ALICE, content: "and again?" });
    await discord.waitFor(() => discord.sent.length === before + 1, 30_000);
    // The answer's row sent whole: no voice message of it can follow.
    await quiet(app, "discord");
    expect(discord.sent.slice(before).map((m) => [m.content, m.files.length])).toEqual([
      ["The meeting moved to Thursday afternoon.", 0],
    ]);
  }, 90_000);

  it("where Discord refuses a voice message, the note goes as an OGG attachment after the text", async () => {
    const { discord, model } = await start(true);
    model.respond(() => ({ content: "Still spoken." }));
    discord.dispatchMessage({ channelId: DM, author: ALICE, content: "/voice on" });
    await discord.waitFor(() => discord.sent.find((m) => m.content.startsWith("Spoken replies")));
    discord.dispatchMessage({ channelId: DM, author: ALICE, content: "speak" });
    const note = await discord.waitFor(() => discord.sent.find((m) => m.files.length === 1), 60_000);
    expect(note.flags).toBeUndefined();
    expect(discord.sent.filter((m) => m.content === "Still spoken.")).toHaveLength(1);
    expect(note.files[0].name).toBe("voice-message.ogg");
    expect(audioFacts(note.files[0].data ?? Buffer.alloc(0))).toMatchObject({ format: "ogg", codec: "opus" });
  }, 90_000);
});
