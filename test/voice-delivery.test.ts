import { afterEach, describe, expect, it } from "vitest";
import type { OutboundMessage } from "../src/bus/types.js";
import { quiet } from "./helpers/app.js";
import { startDiscordHarness } from "./helpers/discord.js";
import { startTelegramHarness, type TelegramHarness } from "./helpers/telegram.js";

/** A spoken reply whose note is gone by the time it is sent (cleaned up before a late retry, or made by another process
 * of a cluster on another machine): the text still goes, on both platforms. */
const gone = { path: "/nonexistent/voice-reply-1.ogg", seconds: 2, waveform: "AAAA" };

let h: TelegramHarness | undefined;
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  await h?.close();
  h = undefined;
  for (const clean of cleanups.splice(0).reverse()) await clean();
});

describe("a spoken reply whose note is gone", () => {
  it("Telegram: the caption goes as a message, a longer text as it is; nothing is dropped", async () => {
    h = await startTelegramHarness();
    const reply = (text: string): OutboundMessage => ({
      channel: "telegram",
      chatId: "42",
      kind: "reply",
      text,
      voice: gone,
    });
    await h.app.bus.publishOutbound(reply("Short and **bold**."));
    await h.app.bus.publishOutbound(reply("Long. ".repeat(400)));
    await h.telegram.waitFor(() => h?.telegram.sent.length === 2);
    expect(h.telegram.sent.map((m) => [m.method, m.text.slice(0, 12)])).toEqual([
      ["sendMessage", "Short and bo"],
      ["sendMessage", "Long. Long. "],
    ]);
  });

  it("Discord: the text is posted, the missing voice message skipped", async () => {
    const ALICE = { id: "200000000000000001", username: "alice" };
    const { discord, app } = await startDiscordHarness(cleanups, { allowFrom: ALICE.id });
    const DM = "140000000000000001";
    await app.bus.publishOutbound({ channel: "discord", chatId: DM, kind: "reply", text: "Still here.", voice: gone });
    await discord.waitFor(() => discord.sent.find((m) => m.content === "Still here."));
    // The row sent whole: no voice message of it can follow.
    await quiet(app, "discord");
    expect(discord.sent.map((m) => [m.content, m.files.length])).toEqual([["Still here.", 0]]);
  });
});
