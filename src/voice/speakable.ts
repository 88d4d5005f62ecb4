import { Lexer, type Token } from "marked";

/** What is said in place of what cannot be read aloud: the listener is pointed to the text sent with the note. */
export const SAID = {
  code: "(a code block, see the text)",
  table: "(a table, see the text)",
  link: "(a link, see the text)",
  image: "(an image, see the text)",
  rest: "The rest is in the text.",
};

/** Inline code longer than this is named, not spelled out. */
const SHORT_CODE = 40;

/** A reply's Markdown as a person reads it aloud (code blocks, tables and bare links named, not read), no control
 * characters, cut near `maxChars` at a sentence or word with a note that the rest is in the text; may be empty. */
export function speakableText(markdown: string, maxChars: number): string {
  // Only a few times the limit is ever lexed: a 100k-character reply costs no more than a short one.
  const head = markdown.slice(0, maxChars * 4);
  const spoken = tidy(Lexer.lex(head).map(block).join("\n"));
  if (spoken.length <= maxChars && head.length === markdown.length) return spoken;
  return `${shorten(spoken, maxChars)}\n${SAID.rest}`.trim();
}

function block(token: Token): string {
  switch (token.type) {
    case "code":
      return SAID.code;
    case "table":
      return SAID.table;
    case "hr":
    case "space":
      return "";
    case "list":
      return (token.items as Token[]).map(block).join("\n");
    case "html":
      return token.text.replace(/<[^>]*>/g, " ");
    default:
      return "tokens" in token && token.tokens ? token.tokens.map(inline).join("") : "text" in token ? token.text : "";
  }
}

function inline(token: Token): string {
  switch (token.type) {
    case "link": {
      // A bare address is named; a link with words says its words.
      const bare = token.text === token.href || /^(https?:|mailto:|www\.)/i.test(token.text);
      return bare ? SAID.link : (token.tokens ?? []).map(inline).join("");
    }
    case "image":
      return SAID.image;
    case "codespan":
      return token.text.length > SHORT_CODE ? SAID.code : token.text;
    case "br":
      return "\n";
    case "html":
      return "";
    default:
      return "tokens" in token && token.tokens ? token.tokens.map(inline).join("") : "text" in token ? token.text : "";
  }
}

/** Entities decoded, control and format characters (but line breaks) and halves of cut emoji out, runs of spaces and blank lines folded. */
function tidy(text: string): string {
  return text
    .replace(/&(amp|lt|gt|quot|#39);/g, (_, name: string) => ENTITIES[name])
    .replace(/[\p{Cc}\p{Cf}\p{Cs}]/gu, (c) => (c === "\n" ? c : " "))
    .replace(/[ \t]+/g, " ")
    .replace(/ ?\n[\n ]*/g, "\n")
    .trim();
}

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', "#39": "'" };

/** The text cut to at most `maxChars`, at the end of a sentence when one ends in the last third, else at a word. */
function shorten(text: string, maxChars: number): string {
  const room = text.slice(0, maxChars);
  const sentence = Math.max(...[". ", "! ", "? ", "\n"].map((end) => room.lastIndexOf(end)));
  if (sentence > maxChars * 0.66) return room.slice(0, sentence + 1).trim();
  const word = room.lastIndexOf(" ");
  return (word > maxChars * 0.5 ? room.slice(0, word) : room).trim();
}
