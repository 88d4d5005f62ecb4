import { describe, expect, it } from "vitest";
import { parseHtml } from "../../test/fakes/telegram-server.js";
import { markdownToTelegramHtml, partialTelegramHtml } from "./format.js";
import { splitTelegramHtml } from "./split.js";

const ANSWER = [
  "# Plan",
  "",
  "Here is **the _plan_** with `code` and a [link](https://example.com/a?b=1&c=2).",
  "",
  "> a quote with *emphasis*",
  "",
  "1. first <step>",
  "2. second & last",
  "",
  "```ts",
  "const a = x < y && b > c;",
  "",
  "console.log(a);",
  "```",
  "",
  "| a | b |",
  "|---|---|",
  "| 1 | 2 |",
  "",
  "Done ~~now~~.",
].join("\n");

describe("partialTelegramHtml", () => {
  it("is HTML Telegram takes at every point of a reply being written", () => {
    for (let end = 1; end <= ANSWER.length; end++) {
      const prefix = ANSWER.slice(0, end);
      const html = partialTelegramHtml(prefix);
      for (const part of splitTelegramHtml(html))
        expect(parseHtml(part), JSON.stringify(prefix)).not.toHaveProperty("error");
    }
  });

  it("formats finished blocks as the reply will be and shows the paragraph being written as plain text", () => {
    expect(partialTelegramHtml("Intro **bold**\n\nNow **half")).toBe("Intro <b>bold</b>\n\nNow **half");
    expect(partialTelegramHtml("a <b> & c")).toBe("a &lt;b&gt; &amp; c");
    expect(partialTelegramHtml("Code:\n\n```js\nlet a = 1 < 2;\n\nmore")).toBe(
      "Code:\n\n<pre>let a = 1 &lt; 2;\n\nmore</pre>",
    );
    expect(partialTelegramHtml("Code:\n\n```")).toBe("Code:");
  });

  it("settles into the reply's own formatting once the text is complete", () => {
    expect(partialTelegramHtml(`${ANSWER}\n\n`)).toBe(markdownToTelegramHtml(ANSWER));
  });
});
