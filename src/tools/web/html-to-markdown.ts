import { Readability } from "@mozilla/readability";
import { parseHTML } from "linkedom";
import TurndownService from "turndown";

export interface Readable {
  title?: string;
  text: string;
}

/**
 * Turns an HTML page into readable Markdown-ish text: Readability picks the article (menus,
 * footers and ads dropped), turndown writes it as Markdown with absolute links. Pages Readability
 * cannot make sense of fall back to the whole body, minus scripts and styles.
 */
export function htmlToMarkdown(html: string, url: string): Readable {
  const { document } = parseHTML(html);
  // Readability resolves relative links against the document's base; linkedom has none by default.
  if (!document.querySelector("base[href]") && document.head) {
    const base = document.createElement("base");
    base.setAttribute("href", url);
    document.head.appendChild(base);
  }
  const pageTitle = document.querySelector("title")?.textContent?.trim() || undefined;
  let article: { title?: string | null; content?: string | null } | null = null;
  try {
    article = new Readability(document as unknown as ConstructorParameters<typeof Readability>[0], {
      charThreshold: 200,
    }).parse();
  } catch {
    article = null;
  }
  const turndown = new TurndownService({ headingStyle: "atx", codeBlockStyle: "fenced", bulletListMarker: "-" });
  turndown.remove(["script", "style", "noscript", "iframe", "template", "svg", "canvas", "form"] as never);
  const source = article?.content ?? fallbackBody(html);
  return { title: article?.title?.trim() || pageTitle, text: tidy(turndown.turndown(source)) };
}

function fallbackBody(html: string): string {
  const { document } = parseHTML(html);
  for (const node of document.querySelectorAll("script, style, noscript, template, svg, nav, header, footer")) {
    node.remove();
  }
  return document.body?.innerHTML ?? document.toString();
}

function tidy(text: string): string {
  return text
    .replace(/[ \t]+\n/g, "\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}
