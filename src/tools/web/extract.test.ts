import { describe, expect, it } from "vitest";
import { classifyBody, decodeBody } from "./extract.js";
import { htmlToMarkdown } from "./html-to-markdown.js";
import { htmlToPlainText, stripTags } from "./html-to-text.js";
import { createHtmlConverter } from "./web-fetch-tool.js";

describe("classifyBody", () => {
  it.each([
    ["text/html; charset=utf-8", "<p>x</p>", "html"],
    ["application/xhtml+xml", "<html/>", "html"],
    ["application/json", "{}", "json"],
    ["application/ld+json", "{}", "json"],
    ["text/plain", "hi", "text"],
    ["text/csv", "a,b", "text"],
    ["application/xml", "<a/>", "text"],
    ["image/png", "\x89PNG", "binary"],
    ["application/pdf", "%PDF-1.7", "binary"],
    [undefined, "<!DOCTYPE html><p>x</p>", "html"],
    [undefined, "  <html><body>x</body></html>", "html"],
    [undefined, '{"a": 1}', "json"],
    ["application/octet-stream", "[1, 2]", "json"],
    [undefined, "just words", "text"],
    [undefined, "a\u0000b", "binary"],
  ])("%s + %j is %s", (type, body, kind) => {
    expect(classifyBody(type, Buffer.from(body, "latin1"))).toBe(kind);
  });
});

describe("decodeBody", () => {
  it("uses the header's charset, then a meta tag's, then UTF-8", () => {
    const latin1 = Buffer.from([0x63, 0x61, 0x66, 0xe9]);
    expect(decodeBody(latin1, "text/plain; charset=ISO-8859-1", "text")).toBe("café");
    const page = Buffer.concat([Buffer.from('<meta charset="windows-1252"><p>'), latin1]);
    expect(decodeBody(page, "text/html", "html")).toBe('<meta charset="windows-1252"><p>café');
    expect(decodeBody(Buffer.from("café"), "text/plain; charset=no-such-charset", "text")).toBe("café");
  });
});

describe("HTML to text", () => {
  it("keeps the article as Markdown and resolves links against the page", () => {
    const html = `<html><head><title>Doc</title></head><body><nav>NAV-LINKS</nav><main><article>
      <h2>Part</h2><p>${"Long enough text for the article. ".repeat(12)}<a href="../up">up</a></p>
      <pre><code>const x = 1;</code></pre></article></main></body></html>`;
    const { title, text, plain } = htmlToMarkdown(html, "https://example.org/a/b/page");
    expect(title).toBe("Doc");
    expect(plain).toBeUndefined();
    expect(text).toContain("## Part");
    expect(text).toContain("[up](https://example.org/a/up)");
    expect(text).toContain("```\nconst x = 1;\n```");
    expect(text).not.toContain("NAV-LINKS");
  });

  it("converts a page without an article whole, minus scripts and menus", () => {
    const html = `<html><body><nav>MENU</nav><script>evil()</script><p>Short <a href="/x">note</a>.</p></body></html>`;
    expect(htmlToMarkdown(html, "https://example.org/").text).toBe("Short [note](https://example.org/x).");
  });

  it("gives deeply nested pages and fragments their text", () => {
    const deep = `<html><body>${"<div>".repeat(600)}deep <script>x()</script>text${"</div>".repeat(600)}</body></html>`;
    expect(htmlToMarkdown(deep, "https://example.org/")).toEqual({
      title: undefined,
      text: "deep text",
      plain: "nested more than 500 levels deep",
    });
    expect(htmlToMarkdown("<p>a <b>fragment</b></p>", "https://example.org/").text).toBe("a **fragment**");
  });

  it("reads plain text from markup without trees or regexes", () => {
    expect(htmlToPlainText("<title>t</title><p>a &amp; b</p><script>x()</script><div>c</div>")).toBe("a & b\n\nc");
    expect(stripTags("<p>one</p><<<< <b>two")).toBe("one two");
    expect(stripTags("a<b>b</b>c")).toBe("a b c");
    expect(stripTags("<".repeat(1_000_000))).toBe("");
  });
});

describe("the HTML converter (worker threads; needs npm run build)", () => {
  it("converts in a worker while the event loop keeps running", async () => {
    const convert = createHtmlConverter(30_000);
    const html = `<html><body>${`<div><p>${"word ".repeat(40)}<a href="/x">l</a></p></div>`.repeat(3000)}</body></html>`;
    let ticks = 0;
    const timer = setInterval(() => ticks++, 5);
    try {
      const result = await convert(html, "https://example.org/", new AbortController().signal);
      expect(result.plain).toBeUndefined();
      expect(result.text).toContain("word word");
    } finally {
      clearInterval(timer);
    }
    expect(ticks).toBeGreaterThan(3);
  });

  it("falls back to bare text when a page takes too long to convert", async () => {
    const convert = createHtmlConverter(1000);
    // Parsing nesting this deep alone takes linkedom many seconds.
    const deep = `<html><body>${"<div>".repeat(150_000)}deep text${"</div>".repeat(150_000)}</body></html>`;
    const result = await convert(deep, "https://example.org/", new AbortController().signal);
    expect(result).toEqual({ text: "deep text", plain: "converting it took longer than 1 s" });
  });
});
