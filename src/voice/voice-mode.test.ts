import { describe, expect, it } from "vitest";
import type { InboundMessage } from "../bus/types.js";
import { parseVoiceArgument, speaksTo, voiceAnswer } from "./voice-mode.js";

const msg = (media: string[], channel: InboundMessage["channel"] = "telegram"): InboundMessage =>
  ({
    id: "1",
    channel,
    chatId: "42",
    senderId: "42",
    senderName: "Ada",
    text: "",
    media,
    isGroup: false,
    mentionsBot: false,
    receivedAt: 0,
    sessionKey: `${channel}:42`,
    ...(channel === "system" ? { run: { kind: "heartbeat", deliverTo: "telegram:42" } } : {}),
  }) as InboundMessage;

describe("voice modes", () => {
  it("speaks always, never when off, and on auto only to a recording; never to a scheduled run", () => {
    const note = msg(["/m/voice-7.ogg"]);
    const written = msg([]);
    const photo = msg(["/m/photo.jpg"]);
    expect([speaksTo("always", written), speaksTo("off", note)]).toEqual([true, false]);
    expect([speaksTo("auto", note), speaksTo("auto", written), speaksTo("auto", photo)]).toEqual([true, false, false]);
    expect(speaksTo("always", msg([], "system"))).toBe(false);
  });

  it("reads /voice's argument, and says what a mode means and why it is text for now", () => {
    expect(["on", " OFF ", "auto", "always", "loud", ""].map(parseVoiceArgument)).toEqual([
      "always",
      "off",
      "auto",
      "always",
      undefined,
      undefined,
    ]);
    expect(voiceAnswer({ mode: "always", chosen: true, set: true }, undefined)).toBe(
      "Spoken replies in this chat: on, so every answer comes as a voice note with its text.",
    );
    expect(voiceAnswer({ mode: "off", chosen: false }, "ffmpeg is not installed.")).toMatch(
      /^Spoken replies in this chat: off \(the default\): answers come as text\. \/voice on/,
    );
    expect(voiceAnswer({ mode: "auto", chosen: true, set: true }, "ffmpeg is not installed.")).toMatch(
      /But for now they stay text: ffmpeg is not installed\.$/,
    );
  });
});
