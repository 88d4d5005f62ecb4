import { Readability } from "@mozilla/readability";
import { parseHTML } from "linkedom";
import TurndownService from "turndown";
import { attempt } from "../../attempt.js";
import { htmlToPlainText } from "./html-to-text.js";

export interface ReadableText {
  title?: string;
  text: string;
  /** Set when the page was converted to plain text instead of Markdown, and why. */
  plain?: string;
}

/** Readability takes minutes on a few hundred thousand elements; articles have a few thousand. Larger pages skip it. */
const MAX_READABILITY_ELEMENTS = 15_000;
const MIN_ARTICLE_CHARS = 200;
/** Readability and turndown recurse through the tree; deeper pages get their bare text. */
const MAX_DEPTH = 500;

/** A page as Markdown with absolute links: Readability's article, or the whole page minus scripts, styles and nav;
 * pages too deep for turndown's recursion become plain text. Runs in a worker (html-worker.ts). */
export function htmlToMarkdown(html: string, url: string): ReadableText {
  // linkedom builds no <html>/<body> around a fragment, and then nothing is found in the body.
  const page = /<html[\s>]/i.test(html.slice(0, 4096)) ? html : `<html><head></head><body>${html}</body></html>`;
  let { document } = parseHTML(page);
  const pageTitle = document.querySelector("title")?.textContent?.trim() || undefined;
  if (depthExceeds(document, MAX_DEPTH)) {
    return { title: pageTitle, text: htmlToPlainText(html), plain: `nested more than ${MAX_DEPTH} levels deep` };
  }
  let article: { title?: string | null; content?: string | null; length?: number | null } | null = null;
  if (document.querySelectorAll("*").length <= MAX_READABILITY_ELEMENTS) {
    withBase(document, url);
    const readable = document as unknown as ConstructorParameters<typeof Readability>[0];
    article = attempt(() => new Readability(readable, { charThreshold: MIN_ARTICLE_CHARS }).parse(), null);
    // Too little to be an article: the whole page says more, parsed anew (Readability changed the document).
    if (!article?.content || (article.length ?? 0) < MIN_ARTICLE_CHARS) {
      article = article && { title: article.title };
      document = parseHTML(page).document;
    }
  }
  const title = article?.title?.trim() || pageTitle;
  try {
    const turndown = new TurndownService({ headingStyle: "atx", codeBlockStyle: "fenced", bulletListMarker: "-" });
    turndown.remove(["script", "style", "noscript", "iframe", "template", "svg", "canvas", "form"] as never);
    return { title, text: tidy(turndown.turndown(article?.content ?? wholeBody(document, url))) };
  } catch (err) {
    return { title, text: htmlToPlainText(html), plain: (err as Error).message };
  }
}

type Doc = ReturnType<typeof parseHTML>["document"];
type Element = ReturnType<Doc["createElement"]>;

/** Walks the tree without recursion and stops as soon as it is deeper than `limit`. */
function depthExceeds(document: Doc, limit: number): boolean {
  const stack: Array<[Element, number]> = document.documentElement ? [[document.documentElement, 1]] : [];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (depth > limit) return true;
    for (const child of node.children) stack.push([child as Element, depth + 1]);
  }
  return false;
}

/** Readability and our link fixing resolve relative links against <base>; linkedom has none. */
function withBase(document: Doc, url: string): void {
  if (document.querySelector("base[href]") || !document.head) return;
  const base = document.createElement("base");
  base.setAttribute("href", url);
  document.head.appendChild(base);
}

function wholeBody(document: Doc, url: string): string {
  for (const node of document.querySelectorAll("script, style, noscript, template, svg, nav, header, footer")) {
    node.remove();
  }
  for (const link of document.querySelectorAll("a[href]")) {
    const href = link.getAttribute("href") ?? "";
    if (URL.canParse(href, url)) link.setAttribute("href", new URL(href, url).href); // a malformed one stays as it is
  }
  return document.body?.innerHTML ?? document.toString();
}

function tidy(text: string): string {
  return text
    .replace(/[ \t]+\n/g, "\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}
