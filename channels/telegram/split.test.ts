import { describe, expect, it } from "vitest";
import { markdownToTelegramHtml } from "./format.js";
import { htmlToPlainText, splitTelegramHtml, TELEGRAM_TEXT_LIMIT } from "./split.js";

const visible = (html: string) => htmlToPlainText(html).length;

/** Every tag opened in a chunk is closed in it, in order: Telegram parses each message on its own. */
function expectBalanced(html: string): void {
  const stack: string[] = [];
  for (const m of html.matchAll(/<(\/?)([a-z]+)[^>]*>/g)) {
    if (m[1]) expect(stack.pop()).toBe(m[2]);
    else stack.push(m[2]);
  }
  expect(stack).toEqual([]);
}

describe("splitTelegramHtml", () => {
  it("keeps a short message whole", () => {
    expect(splitTelegramHtml("<b>hi</b> there")).toEqual(["<b>hi</b> there"]);
  });

  it("splits at paragraph boundaries, each chunk under the limit", () => {
    const paragraphs = Array.from({ length: 12 }, (_, i) => `Paragraph ${i} ${"word ".repeat(80).trim()}.`);
    const chunks = splitTelegramHtml(paragraphs.join("\n\n"), 1000);
    expect(chunks.length).toBeGreaterThan(4);
    for (const chunk of chunks) {
      expect(visible(chunk)).toBeLessThanOrEqual(1000);
      expect(chunk).toMatch(/^Paragraph \d+ word/);
      expect(chunk.endsWith(".")).toBe(true);
    }
    expect(chunks.join("\n\n")).toBe(paragraphs.join("\n\n"));
  });

  it("falls back to line breaks, then spaces, then a hard cut", () => {
    const lines = Array.from({ length: 30 }, (_, i) => `line ${i} ${"x".repeat(30)}`).join("\n");
    for (const chunk of splitTelegramHtml(lines, 200)) {
      expect(chunk).toMatch(/^line \d+ x+$/m);
      expect(chunk.split("\n").every((l) => /^line \d+ x{30}$/.test(l))).toBe(true);
    }
    const words = "alpha beta gamma delta ".repeat(40).trim();
    const wordChunks = splitTelegramHtml(words, 100);
    for (const chunk of wordChunks) expect(chunk).toMatch(/^(alpha|beta|gamma|delta)( (alpha|beta|gamma|delta))*$/);
    const blob = "y".repeat(250);
    expect(splitTelegramHtml(blob, 100)).toEqual(["y".repeat(100), "y".repeat(100), "y".repeat(50)]);
  });

  it("closes a fenced code block at the cut and reopens it in the next chunk", () => {
    const code = Array.from({ length: 60 }, (_, i) => `  console.log(${i} < ${i + 1});`).join("\n");
    const html = markdownToTelegramHtml(`Here is the code:\n\n\`\`\`js\n${code}\n\`\`\`\n\nDone.`);
    const chunks = splitTelegramHtml(html, 600);
    expect(chunks.length).toBeGreaterThan(2);
    for (const chunk of chunks) {
      expect(visible(chunk)).toBeLessThanOrEqual(600);
      expectBalanced(chunk);
    }
    const middle = chunks.slice(1, -1);
    for (const chunk of middle) expect(chunk).toMatch(/^<pre><code class="language-js">[\s\S]*<\/code><\/pre>$/);
    // Indentation inside the code survives the cut.
    expect(chunks[1]).toMatch(/^<pre><code class="language-js"> {2}console\.log/);
    // Nothing is lost: the visible text reads the same, line by line.
    const plain = chunks.map(htmlToPlainText).join("\n");
    expect(plain.split("\n").filter(Boolean)).toEqual(htmlToPlainText(html).split("\n").filter(Boolean));
  });

  it("never cuts inside a tag, an entity or a surrogate pair", () => {
    const html = `${"&lt;&amp;😀".repeat(100)}<a href="https://example.com/a-long-link">${"link ".repeat(50)}</a>`;
    const chunks = splitTelegramHtml(html, 77);
    for (const chunk of chunks) {
      expect(visible(chunk)).toBeLessThanOrEqual(77);
      expectBalanced(chunk);
      expect(chunk).not.toMatch(/&[a-z]*$|^[a-z]*;/);
      expect(chunk).not.toMatch(/[\ud800-\udbff]$|^[\udc00-\udfff]/);
    }
    const links = chunks.filter((c) => c.includes("<a "));
    expect(links.length).toBeGreaterThan(1);
    for (const chunk of links) expect(chunk).toMatch(/<a href="https:\/\/example\.com\/a-long-link">/);
  });

  it("defaults to Telegram's limit of 4096 characters", () => {
    const text = "abc ".repeat(3000);
    const chunks = splitTelegramHtml(text);
    expect(chunks.length).toBe(3);
    for (const chunk of chunks) expect(visible(chunk)).toBeLessThanOrEqual(TELEGRAM_TEXT_LIMIT);
  });

  it("drops tags that would be empty after a cut and chunks with nothing visible", () => {
    const html = `${"a".repeat(10)}\n\n<b>${"b".repeat(10)}</b>`;
    expect(splitTelegramHtml(html, 12)).toEqual(["a".repeat(10), `<b>${"b".repeat(10)}</b>`]);
    expect(splitTelegramHtml("<b> </b>\n\n")).toEqual([]);
  });
});

describe("htmlToPlainText", () => {
  it("removes tags and decodes entities", () => {
    expect(htmlToPlainText('<b>a &lt; b</b> &amp; <a href="x">c&quot;</a> &#33;&#x41;')).toBe('a < b & c" !A');
  });
});
