import { describe, expect, it } from "vitest";
import { markdownToTelegramHtml } from "./format.js";

describe("markdownToTelegramHtml", () => {
  it("renders inline styles with Telegram's tags", () => {
    expect(markdownToTelegramHtml("**bold** *italic* __strong__ _em_ ~~gone~~ `code`")).toBe(
      "<b>bold</b> <i>italic</i> <b>strong</b> <i>em</i> <s>gone</s> <code>code</code>",
    );
  });

  it("escapes everything Telegram would parse as markup", () => {
    expect(markdownToTelegramHtml("if a < b && c > d then `x<y>&z`")).toBe(
      "if a &lt; b &amp;&amp; c &gt; d then <code>x&lt;y&gt;&amp;z</code>",
    );
    expect(markdownToTelegramHtml("<script>alert(1)</script> and <b>fake</b>")).toBe(
      "&lt;script&gt;alert(1)&lt;/script&gt; and &lt;b&gt;fake&lt;/b&gt;",
    );
  });

  it("renders fenced code blocks with their language", () => {
    expect(markdownToTelegramHtml("```python\nprint('<hi>')\n```")).toBe(
      "<pre><code class=\"language-python\">print('&lt;hi&gt;')</code></pre>",
    );
    expect(markdownToTelegramHtml("```\nplain\n  indented\n```")).toBe("<pre>plain\n  indented</pre>");
  });

  it("renders links with escaped addresses and refuses unsafe schemes", () => {
    expect(markdownToTelegramHtml('[docs](https://ex.com/?a=1&b="2")')).toBe(
      '<a href="https://ex.com/?a=1&amp;b=&quot;2&quot;">docs</a>',
    );
    expect(markdownToTelegramHtml("[click](javascript:alert(1))")).toBe("click");
    // A link may not contain code in Telegram: the code becomes plain text inside it.
    expect(markdownToTelegramHtml("[`npm i`](https://npmjs.com)")).toBe('<a href="https://npmjs.com">npm i</a>');
  });

  it("turns headings, lists and rules into lines Telegram can show", () => {
    const html = markdownToTelegramHtml(
      "# Plan\n\n- one\n- two\n  - nested\n\n3. c\n4. d\n\n- [x] done\n- [ ] todo\n\n---",
    );
    expect(html).toBe("<b>Plan</b>\n\n• one\n• two\n  • nested\n\n3. c\n4. d\n\n☑ done\n☐ todo\n\n——————");
  });

  it("renders quotes without nesting them", () => {
    expect(markdownToTelegramHtml("> outer\n> > inner")).toBe("<blockquote>outer\n\ninner</blockquote>");
  });

  it("renders tables as a monospaced block", () => {
    expect(markdownToTelegramHtml("| name | n |\n|---|---|\n| a<b | 10 |")).toBe(
      "<pre>name | n\n-----+---\na&lt;b  | 10</pre>",
    );
  });

  it("keeps paragraphs apart and line breaks inside them", () => {
    expect(markdownToTelegramHtml("first line\nsecond line\n\n\n\nnext paragraph")).toBe(
      "first line\nsecond line\n\nnext paragraph",
    );
  });
});
