import { Lexer, type MarkedToken, type Token, type Tokens } from "marked";
import { htmlToPlainText } from "./split.js";

/** Model markdown → Telegram's HTML subset (b, i, s, u, code, pre, a, blockquote): headings become bold lines, lists
 * bullet lines, tables monospaced blocks, raw HTML text. Its nesting rules (code and pre contain nothing, links no
 * code, blockquotes don't nest) are kept so a well-formed answer is never refused. */
export function markdownToTelegramHtml(markdown: string): string {
  const tokens = new Lexer({ gfm: true }).lex(markdown);
  return renderBlocks(tokens, { inLink: false, inQuote: false })
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}

type Scope = { inLink: boolean; inQuote: boolean };

export function escapeHtml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

function renderBlocks(tokens: Token[], scope: Scope): string {
  return tokens.map((token) => renderBlock(token, scope)).join("");
}

function renderBlock(token: Token, scope: Scope): string {
  const t = token as MarkedToken;
  switch (t.type) {
    case "space":
    case "def":
      return "";
    case "paragraph":
      return `${renderInline(t.tokens, scope)}\n\n`;
    case "heading":
      return `<b>${renderInline(t.tokens, scope)}</b>\n\n`;
    case "code":
      return `${renderCodeBlock(t)}\n\n`;
    case "blockquote": {
      const inner = renderBlocks(t.tokens, { ...scope, inQuote: true }).trim();
      return scope.inQuote ? `${inner}\n\n` : `<blockquote>${inner}</blockquote>\n\n`;
    }
    case "list":
      return `${renderList(t, scope, 0)}\n\n`;
    case "table":
      return `${renderTable(t)}\n\n`;
    case "hr":
      return "——————\n\n";
    case "html":
    case "text":
      return `${renderInlineToken(t, scope)}\n\n`;
    default:
      return renderInlineToken(token, scope);
  }
}

function renderCodeBlock(token: Tokens.Code): string {
  const code = escapeHtml(token.text.replace(/\n+$/, ""));
  const lang = token.lang?.trim().split(/\s+/)[0];
  return lang && /^[\w#+.-]+$/.test(lang)
    ? `<pre><code class="language-${lang}">${code}</code></pre>`
    : `<pre>${code}</pre>`;
}

function renderList(list: Tokens.List, scope: Scope, depth: number): string {
  const indent = "  ".repeat(depth);
  const start = typeof list.start === "number" ? list.start : 1;
  return list.items
    .map((item, index) => {
      const marker = item.task ? (item.checked ? "☑" : "☐") : list.ordered ? `${start + index}.` : "•";
      const parts = item.tokens
        .filter((child) => child.type !== "checkbox")
        .map((child) =>
          child.type === "list" ? renderList(child as Tokens.List, scope, depth + 1) : renderBlock(child, scope).trim(),
        );
      return `${indent}${marker} ${parts.filter(Boolean).join("\n")}`;
    })
    .join("\n");
}

/** Tables have no Telegram form; a monospaced block keeps the columns readable. */
function renderTable(table: Tokens.Table): string {
  const cellText = (tokens: Token[]) => htmlToPlainText(renderInline(tokens, { inLink: true, inQuote: false }));
  const rows = [table.header, ...table.rows].map((row) => row.map((cell) => cellText(cell.tokens)));
  const widths = rows[0].map((_, col) => Math.max(...rows.map((row) => (row[col] ?? "").length)));
  const line = (row: string[]) =>
    row
      .map((cell, col) => cell.padEnd(widths[col]))
      .join(" | ")
      .trimEnd();
  const separator = widths.map((w) => "-".repeat(w)).join("-+-");
  return `<pre>${escapeHtml([line(rows[0]), separator, ...rows.slice(1).map(line)].join("\n"))}</pre>`;
}

function renderInline(tokens: Token[] | undefined, scope: Scope): string {
  return (tokens ?? []).map((token) => renderInlineToken(token, scope)).join("");
}

function renderInlineToken(token: Token, scope: Scope): string {
  const t = token as MarkedToken;
  switch (t.type) {
    case "strong":
      return `<b>${renderInline(t.tokens, scope)}</b>`;
    case "em":
      return `<i>${renderInline(t.tokens, scope)}</i>`;
    case "del":
      return `<s>${renderInline(t.tokens, scope)}</s>`;
    case "codespan":
      return scope.inLink ? escapeHtml(t.text) : `<code>${escapeHtml(t.text)}</code>`;
    case "br":
      return "\n";
    case "link":
    case "image": {
      const label =
        t.type === "link" ? renderInline(t.tokens, { ...scope, inLink: true }) : escapeHtml(t.text || "image");
      // Only schemes Telegram opens; anything else (javascript:, relative paths) is shown as plain text.
      if (scope.inLink || !/^(https?:|tg:|mailto:)/i.test(t.href)) return label;
      return `<a href="${escapeHtml(t.href).replace(/"/g, "&quot;")}">${label}</a>`;
    }
    case "text":
      return t.tokens ? renderInline(t.tokens, scope) : escapeHtml(t.text);
    case "escape":
      return escapeHtml(t.text);
    case "html":
      return escapeHtml(t.raw);
    default:
      return "raw" in token ? escapeHtml(String(token.raw)) : "";
  }
}

/** A reply still being written, as HTML Telegram never refuses and that does not flicker: finished blocks formatted as
 * the reply will be, the paragraph being written plain (its `**` may be open), an open code block as code. */
export function partialTelegramHtml(markdown: string): string {
  let fence: { marker: string; at: number; body: number } | undefined;
  let finished = 0;
  let at = 0;
  for (const line of markdown.split("\n")) {
    const marker = /^ {0,3}(`{3,}|~{3,})/.exec(line)?.[1];
    if (marker && !fence) fence = { marker, at, body: at + line.length + 1 };
    else if (marker && fence && marker[0] === fence.marker[0] && marker.length >= fence.marker.length) {
      if (line.trim() === marker) fence = undefined;
    } else if (!fence && line.trim() === "") finished = at;
    at += line.length + 1;
  }
  const closedEnd = fence ? fence.at : finished;
  let closed: string;
  try {
    closed = markdownToTelegramHtml(markdown.slice(0, closedEnd));
  } catch {
    closed = escapeHtml(markdown.slice(0, closedEnd));
  }
  const tail = fence
    ? `<pre>${escapeHtml(markdown.slice(fence.body).replace(/\n+$/, ""))}</pre>`
    : escapeHtml(markdown.slice(closedEnd).trim());
  return [closed, tail.replace(/^<pre><\/pre>$/, "")].filter(Boolean).join("\n\n");
}
