import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import type { ChatMessage } from "./model.js";
import { createTokenCounter } from "./tokens.js";

describe("token counting", () => {
  it("counts Chinese, Japanese and emoji far above characters / 4", () => {
    const tokens = createTokenCounter();
    const chinese = "我妹妹的生日是三月五日，我们要给她买一个蛋糕。";
    const japanese = "明日の午後三時に歯医者の予約があります。";
    const emoji = "🎂🎉👨‍👩‍👧❤️🔥🚀";
    for (const text of [chinese, japanese, emoji]) {
      expect(tokens.text(text)).toBeGreaterThan(Math.ceil(text.length / 4) * 2);
    }
    expect(tokens.text("hello world")).toBeGreaterThanOrEqual(2);
    expect(tokens.text("hello world")).toBeLessThanOrEqual(3);
  });

  it("treats special-token text as text and counts a 110,000-character run of Chinese (quadratic in one piece)", () => {
    const tokens = createTokenCounter();
    expect(tokens.text("<|endoftext|> hi")).toBeGreaterThan(3);
    const long = "我妹妹的生日是三月五日".repeat(10_000);
    const counted = tokens.text(long);
    expect(counted).toBeGreaterThan(80_000);
    expect(counted).toBeLessThan(130_000);
  });

  it("counts each tool schema once, and a changed one anew", () => {
    const tokens = createTokenCounter();
    let serialised = 0;
    const schema = (description: string) => ({
      toJSON() {
        serialised++;
        return { type: "function", function: { name: "exec", description, parameters: { type: "object" } } };
      },
    });
    const exec = schema("Run a shell command in the sandbox. ".repeat(20));
    const first = tokens.tools([exec]);
    const hi: ChatMessage[] = [{ role: "user", content: "hi" }];
    for (let turn = 0; turn < 50; turn++) expect(tokens.request(hi, [exec])).toBe(tokens.request(hi) + first);
    expect(serialised).toBe(1);
    expect(tokens.tools([schema("Run a shell command.")])).toBeLessThan(first);
    expect(serialised).toBe(2);
  });

  it("calibrates against the endpoint's usage: up at once, down slowly, never below 1", () => {
    const tokens = createTokenCounter();
    const text = "word ".repeat(1000);
    const before = tokens.text(text);
    tokens.calibrate(before, before * 2);
    expect(tokens.factor).toBeCloseTo(2, 5);
    expect(tokens.text(text)).toBe(Math.ceil(before * 2));
    tokens.calibrate(tokens.text(text), before);
    expect(tokens.factor).toBeGreaterThan(1.5);
    for (let i = 0; i < 50; i++) tokens.calibrate(tokens.text(text), before / 2);
    expect(tokens.factor).toBeCloseTo(1, 2);
    tokens.calibrate(tokens.text(text), 1); // a server that always says 1 (the fake) changes nothing
    expect(tokens.factor).toBeGreaterThanOrEqual(1);
    tokens.calibrate(10, 10_000); // too small a request to learn from
    expect(tokens.factor).toBeLessThan(1.01);
  });

  it("ignores a usage no tokenizer could explain (a running total, 10^12), but still caps a plausible rise at 4", () => {
    const tokens = createTokenCounter();
    const text = "word ".repeat(1000);
    const before = tokens.text(text);
    for (const absurd of [1e12, Number.MAX_VALUE, before * 9, -5]) tokens.calibrate(tokens.text(text), absurd);
    expect(tokens.factor).toBe(1);
    tokens.calibrate(tokens.text(text), before * 6);
    expect(tokens.factor).toBe(4);
  });
});

describe("images", () => {
  it("counts an image part as a picture's worth of tokens", () => {
    const tokens = createTokenCounter();
    const withImage = tokens.rawMessage({
      role: "user",
      content: [
        { type: "text", text: "what is this?" },
        { type: "image_url", image_url: { url: `data:image/jpeg;base64,${"A".repeat(100_000)}` } },
      ],
    });
    expect(withImage).toBeGreaterThanOrEqual(800);
    expect(withImage).toBeLessThan(820);
  });
});

describe("memory", () => {
  it("remembers only a few of the long texts it has counted", () => {
    // In a child with --expose-gc: 1,000 prompts of 30,000 characters that differ only at the end,
    // as each chat's system prompt does. Kept alive, they would hold ~60 MB.
    const script = `
      const { createTokenCounter } = await import(${JSON.stringify(new URL("../../dist/src/llm/tokens.js", import.meta.url).href)});
      const tokens = createTokenCounter();
      const shared = "The workspace files, the same for every chat. ".repeat(650);
      tokens.text(shared + "warm up");
      globalThis.gc(); globalThis.gc();
      const before = process.memoryUsage().heapUsed;
      for (let i = 0; i < 1000; i++) tokens.text(shared + "chat " + i + " at " + new Date(i * 1e9).toISOString());
      globalThis.gc(); globalThis.gc();
      console.log(Math.round((process.memoryUsage().heapUsed - before) / 1024));
    `;
    const grownKiB = Number(
      execFileSync(process.execPath, ["--expose-gc", "--input-type=module", "-e", script], { encoding: "utf8" }).trim(),
    );
    expect(grownKiB).toBeLessThan(8 * 1024);
  });
});
