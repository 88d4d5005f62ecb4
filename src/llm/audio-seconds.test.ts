import { execFileSync } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempHome } from "../../test/helpers/app.js";
import { audioSeconds } from "./transcribe.js";

const ffmpeg = ["/usr/bin/ffmpeg", "/usr/local/bin/ffmpeg"].some((path) => existsSync(path));

describe("audioSeconds", () => {
  it.skipIf(!ffmpeg)("reads an Ogg/Opus voice note's and a WAV's length exactly", async () => {
    const dir = tempHome("pincer-audio-");
    const make = (name: string, codec: string[]) => {
      const out = join(dir, name);
      execFileSync("ffmpeg", ["-loglevel", "error", "-f", "lavfi", "-i", "sine=d=6.5", ...codec, out]);
      return out;
    };
    expect(await audioSeconds(make("a.ogg", ["-c:a", "libopus"]))).toBeCloseTo(6.5, 1);
    expect(await audioSeconds(make("a.wav", ["-ar", "16000", "-ac", "1"]))).toBeCloseTo(6.5, 1);
  });

  it("guesses any other format from its size, on the long side", async () => {
    const path = join(tempHome("pincer-audio-"), "a.mp3");
    writeFileSync(path, Buffer.alloc(40_000));
    expect(await audioSeconds(path)).toBe(10);
  });
});
