import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { packageRoot } from "../src/paths.js";
import { tempHome } from "./helpers/app.js";
import { audioFacts, hasSpeechPackages } from "./helpers/audio.js";
import { CHROMIUM, controlPageInChromium } from "./helpers/browser.js";
import { fakeModelForFile } from "./helpers/model.js";
import { until } from "./helpers/until.js";
import { login } from "./helpers/web.js";

/** A spoken reply where no voice note can be sent: the web chat page plays it (real Chromium), `pincer chat` says
 * where it is. */
const speech = hasSpeechPackages();
const ESPEAK = ["espeak-ng", "-v", "en", "-w", "{out}", "--stdin"];
const model = fakeModelForFile();

/** What the test reads of the page's <audio> element. */
type Media = {
  readyState: number;
  duration: number;
  currentTime: number;
  ended: boolean;
  addEventListener(type: string, listener: () => void): void;
};

describe.runIf(speech && CHROMIUM)("the web chat plays a spoken reply", () => {
  const inChromium = controlPageInChromium({
    adjust: (config) => {
      config.voice = { ...config.voice, replies: "always", tts: { command: ESPEAK } };
    },
    args: ["--autoplay-policy=no-user-gesture-required"],
  });
  beforeAll(() => inChromium.tg.model.respond(() => ({ content: "Here it is, read aloud for you." })));

  it("shows the text and an audio player that loads the OGG/Opus note and plays it", async () => {
    const { h } = inChromium;
    const { page, errors } = await inChromium.open();
    await page.locator("#chat-form textarea").fill("read it to me");
    await page.locator("#chat-form button").click();
    const audio = page.locator("#chat-log li.msg.bot audio");
    await audio.waitFor({ timeout: 60_000 }).catch(async (err) => {
      throw new Error(`${err}\n${await page.locator("#chat-log").innerHTML()}\n${errors.join("\n")}`);
    });
    expect(await page.locator("#chat-log li.msg.bot .text").last().textContent()).toBe(
      "Here it is, read aloud for you.",
    );
    // Chromium decoded it: a length, and it plays (or played to its end).
    const duration = await audio.evaluate(
      (el: Media) =>
        new Promise<number>((resolve) => {
          if (el.readyState >= 1) return resolve(el.duration);
          el.addEventListener("loadedmetadata", () => resolve(el.duration));
          el.addEventListener("error", () => resolve(-1));
        }),
    );
    expect(duration).toBeGreaterThan(1);
    expect(duration).toBeLessThan(8);
    await expect.poll(() => audio.evaluate((el: Media) => el.currentTime > 0 || el.ended)).toBe(true);
    expect(errors).toEqual([]);
    await page.close();

    // The note is served only to a session, and only under an id the web chat gave out.
    const headers = await login(h.base, h.token);
    const id = encodeURIComponent("../../pincer.db");
    expect((await fetch(`${h.base}/api/voice?chat=main&id=${id}`, { headers })).status).toBe(404);
    expect((await fetch(`${h.base}/api/voice?chat=main&id=x`)).status).toBe(401);
  }, 90_000);
});

describe.runIf(speech)("pincer chat and a spoken reply", () => {
  it("prints the text and says where the spoken reply's note is", async () => {
    const home = tempHome("pincer-chat-voice-");
    writeFileSync(
      join(home, "config.json"),
      JSON.stringify({ voice: { replies: "always", tts: { command: ESPEAK } } }),
    );
    model.enqueue({ content: "Spoken in the terminal too." });
    const child = spawn(process.execPath, [join(packageRoot(), "dist/src/cli/main.js"), "chat"], {
      env: {
        PATH: process.env.PATH,
        HOME: home,
        PINCER_HOME: home,
        PINCER_TIMEZONE: "UTC",
        LOG_LEVEL: "silent",
        OPENAI_API_KEY: "test",
        OPENAI_BASE_URL: model.url,
        PINCER_SANDBOX: "none",
        PINCER_WEB_ADDR: "off",
      },
      cwd: home,
    });
    let stdout = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    const exited = new Promise((resolve) => child.on("exit", resolve));
    child.stdin.end("say something\n");
    const said = await until(
      () => /pincer: Spoken in the terminal too\.\n\(spoken reply, \d+ s: (\/.+\.ogg)\)/.exec(stdout),
      "the reply and its note",
      60_000,
      () => stdout,
    );
    expect(await exited).toBe(0);
    expect(audioFacts(readFileSync(said[1]))).toMatchObject({ format: "ogg", codec: "opus" });
  }, 90_000);
});
