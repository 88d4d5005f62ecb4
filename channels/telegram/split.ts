/** Telegram refuses a message longer than this many characters after entity parsing. */
export const TELEGRAM_TEXT_LIMIT = 4096;

type Atom =
  | { kind: "open"; name: string; raw: string }
  | { kind: "close"; name: string; raw: string }
  /** One visible character: a code point or an HTML entity; `width` counts UTF-16 units as Telegram does. */
  | { kind: "char"; raw: string; char: string; width: number };

type OpenTag = { name: string; raw: string };
type Cut = { end: number; resume: number; stackAtEnd: OpenTag[] };
/** Where a chunk may end, ranked: a paragraph break, a line break, a space. */
type Break = { at: number; resume: number; visible: number; rank: number; stack: OpenTag[] };

const [SPACE, LINE, PARAGRAPH] = [1, 2, 3];

/** Splits Telegram HTML into messages of at most `limit` visible characters, at paragraph, then line, then word
 * boundaries (a hard cut only when a chunk has none in its second half), never inside a tag or an entity. Tags open
 * at a cut (a code block, a quote, bold) are closed at the end of one chunk and reopened at the start of the next. */
export function splitTelegramHtml(html: string, limit = TELEGRAM_TEXT_LIMIT): string[] {
  const atoms = tokenize(html);
  const chunks: string[] = [];
  let start = 0;
  let stack: OpenTag[] = [];
  const raw = (list: Array<{ raw: string }>) => list.map((a) => a.raw).join("");
  while (start < atoms.length) {
    const { end, resume, stackAtEnd } = findCut(atoms, start, stack, limit);
    const close = stackAtEnd.map((t) => `</${t.name}>`).reverse();
    const chunk = dropEmptyTags(raw(stack) + raw(atoms.slice(start, end)) + close.join(""));
    if (htmlToPlainText(chunk).trim()) chunks.push(chunk.trim());
    start = resume;
    stack = stackAtEnd;
  }
  return chunks;
}

function findCut(atoms: Atom[], start: number, initial: OpenTag[], limit: number): Cut {
  const stack = [...initial];
  const breaks: Break[] = [];
  let visible = 0;
  for (let i = start; i < atoms.length; i++) {
    const atom = atoms[i];
    if (atom.kind === "open") {
      stack.push({ name: atom.name, raw: atom.raw });
      continue;
    }
    if (atom.kind === "close") {
      const at = stack.map((t) => t.name).lastIndexOf(atom.name);
      if (at >= 0) stack.splice(at, 1);
      continue;
    }
    if (visible + atom.width > limit) return cutAt(breaks, limit, i, stack);
    // Only the first character of a whitespace run is a candidate; the run is skipped at the cut.
    if (atom.char === " " || (atom.char === "\n" && !isChar(atoms[i - 1], "\n"))) {
      const rank = atom.char === " " ? SPACE : isChar(atoms[i + 1], "\n") ? PARAGRAPH : LINE;
      breaks.push({ at: i, resume: skipRun(atoms, i), visible, rank, stack: [...stack] });
    }
    visible += atom.width;
  }
  return { end: atoms.length, resume: atoms.length, stackAtEnd: stack };
}

function cutAt(breaks: Break[], limit: number, hardAt: number, stack: OpenTag[]): Cut {
  for (const rank of [PARAGRAPH, LINE, SPACE]) {
    const best = breaks.findLast((b) => b.rank === rank && b.visible >= limit / 2);
    if (best) return { end: best.at, resume: best.resume, stackAtEnd: best.stack };
  }
  return { end: hardAt, resume: hardAt, stackAtEnd: [...stack] };
}

const isChar = (atom: Atom | undefined, char: string) => atom?.kind === "char" && atom.char === char;

/** The index after the whitespace run that starts at i (newlines for a line break, one space otherwise). */
function skipRun(atoms: Atom[], i: number): number {
  if (isChar(atoms[i], " ")) return i + 1;
  let j = i;
  while (isChar(atoms[j], "\n")) j++;
  return j;
}

/** Drops a reopened tag with nothing inside, or one closed where it opened: Telegram rejects empty entities. */
function dropEmptyTags(html: string): string {
  const empty = /<([a-z][\w-]*)(?:\s[^>]*)?>\s*<\/\1>/gi;
  for (let previous = ""; previous !== html; ) {
    previous = html;
    html = html.replace(empty, (match) => (match.includes("\n") ? "\n" : ""));
  }
  return html;
}

const NAMED_ENTITIES: Record<string, string> = { lt: "<", gt: ">", amp: "&", quot: '"', apos: "'", nbsp: "\u00a0" };

function decodeEntity(entity: string): string {
  const body = entity.slice(1, -1);
  if (body.startsWith("#x") || body.startsWith("#X")) return String.fromCodePoint(Number.parseInt(body.slice(2), 16));
  if (body.startsWith("#")) return String.fromCodePoint(Number.parseInt(body.slice(1), 10));
  return NAMED_ENTITIES[body] ?? entity;
}

function tokenize(html: string): Atom[] {
  const atoms: Atom[] = [];
  const pattern = /<\/([a-z][\w-]*)\s*>|<([a-z][\w-]*)(?:\s[^>]*)?>|&(?:#\d+|#x[\da-f]+|[a-z]+);|[\s\S]/giu;
  for (const match of html.matchAll(pattern)) {
    const raw = match[0];
    if (match[1]) atoms.push({ kind: "close", name: match[1].toLowerCase(), raw });
    else if (match[2]) atoms.push({ kind: "open", name: match[2].toLowerCase(), raw });
    else {
      const char = raw.startsWith("&") && raw.length > 1 ? decodeEntity(raw) : raw;
      atoms.push({ kind: "char", raw, char, width: char.length });
    }
  }
  return atoms;
}

/** What a reader sees of Telegram HTML, tags removed and entities decoded (the plain-text fallback). */
export function htmlToPlainText(html: string): string {
  return tokenize(html)
    .filter((a): a is Extract<Atom, { kind: "char" }> => a.kind === "char")
    .map((a) => a.char)
    .join("");
}
