import { Parser } from "htmlparser2";

const SKIP = new Set(["script", "style", "noscript", "template", "svg", "head", "title", "iframe", "object"]);
const BLOCK = new Set(
  "p div br li tr h1 h2 h3 h4 h5 h6 section article header footer blockquote pre table ul ol hr".split(" "),
);

/** A page's text without markup from a streaming parser: linear and without recursion, the fallback for any page. */
export function htmlToPlainText(html: string): string {
  const parts: string[] = [];
  let skipping = 0;
  const parser = new Parser(
    {
      onopentagname(name) {
        if (SKIP.has(name)) skipping++;
        else if (BLOCK.has(name)) parts.push("\n");
      },
      onclosetag(name, implied) {
        if (SKIP.has(name)) skipping = Math.max(0, skipping - 1);
        else if (BLOCK.has(name) && !implied) parts.push("\n");
      },
      ontext(text) {
        if (skipping === 0) parts.push(text);
      },
    },
    { decodeEntities: true },
  );
  parser.end(html);
  return tidy(parts.join(""));
}

/** The last resort when even the worker gave up: strictly linear, safe on the main thread; script text may remain. */
export function stripTags(html: string): string {
  let out = "";
  let inTag = false;
  let start = 0;
  for (let i = 0; i < html.length; i++) {
    const c = html.charCodeAt(i);
    if (!inTag && c === 60 /* < */) {
      out += html.slice(start, i);
      inTag = true;
    } else if (inTag && c === 62 /* > */) {
      inTag = false;
      start = i + 1;
      out += " ";
    }
  }
  if (!inTag) out += html.slice(start);
  return tidy(out);
}

function tidy(text: string): string {
  return text
    .replace(/[ \t\r\f\v]+/g, " ")
    .replace(/ ?\n ?/g, "\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}
