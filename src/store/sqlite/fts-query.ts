/** A safe FTS5 query for trigram indexes: every term quoted, only letters, digits or pictographs (no FTS5 syntax). */
export interface FtsQuery {
  /** Every term looked for (trigrams, words, bigrams), lower-case, to mark them in snippets. */
  terms: string[];
  /** `"t1" OR "t2" …` for the MATCH operator, or undefined when no term has three characters. */
  match?: string;
  /** Terms too short for a trigram index (one or two characters), for a LIKE scan when MATCH finds too little. */
  short: string[];
}

const MAX_TERMS = 48;
/** Each short term is a LIKE over every message of the chat (a scan, on the event loop): few of them. */
const MAX_SHORT_TERMS = 12;
// Scripts written without spaces between words: a run of them is cut into overlapping trigrams.
const UNSPACED =
  /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Thai}\p{Script=Lao}\p{Script=Khmer}\p{Script=Myanmar}\p{Extended_Pictographic}]/u;
// A token's runs of unspaced and of other scripts; a combining mark or variation selector (the ️ in ❤️) stays with the
// character before it.
const RUN = new RegExp(`(?<unspaced>(?:${UNSPACED.source}\\p{M}*)+)|(?:(?!${UNSPACED.source}).\\p{M}*)+`, "gu");
const TOKEN = /[\p{L}\p{N}\p{M}\p{Extended_Pictographic}]+/gu;

export function buildFtsQuery(input: string): FtsQuery {
  const terms = new Set<string>();
  const bigrams = new Set<string>();
  const tiny = new Set<string>();
  for (const token of input.normalize("NFKC").toLowerCase().match(TOKEN) ?? []) {
    for (const run of token.matchAll(RUN)) {
      const chars = [...run[0]];
      if (run.groups?.unspaced) {
        for (let i = 0; i + 3 <= chars.length; i++) terms.add(chars.slice(i, i + 3).join(""));
        // "妹妹生日" shares no trigram with "妹妹的生日": its bigrams still find it (by LIKE).
        for (let i = 0; i + 2 <= chars.length; i++) bigrams.add(chars.slice(i, i + 2).join(""));
        if (chars.length === 1) tiny.add(run[0]);
      } else {
        (chars.length >= 3 ? terms : tiny).add(run[0]);
      }
    }
  }
  const picked = [...terms].slice(0, MAX_TERMS);
  // One- and two-letter words only count when there is nothing better to look for.
  const short = [...bigrams, ...(picked.length === 0 ? tiny : [])].slice(0, MAX_SHORT_TERMS);
  return {
    terms: [...terms, ...bigrams, ...tiny],
    match: picked.length > 0 ? picked.map((t) => `"${t.replaceAll('"', '""')}"`).join(" OR ") : undefined,
    short,
  };
}

/** Escapes `%`, `_` and `\` for `LIKE … ESCAPE '\'`. */
export const escapeLike = (text: string) => text.replace(/[\\%_]/g, "\\$&");
export const likePattern = (term: string) => `%${escapeLike(term)}%`;

/** ~`width` characters around the first term found, terms marked «like this» (FTS5's snippet() counts trigrams). */
export function makeSnippet(text: string, terms: string[], width = 280): string {
  const flat = text.replace(/\s+/g, " ").trim();
  const lower = foldAccents(flat.toLowerCase());
  // Lower-casing keeps positions in nearly every script; where it does not, show the lower-cased text.
  const shown = lower.length === flat.length ? flat : lower;
  const ranges: Array<[number, number]> = [];
  for (const term of terms.map(foldAccents)) {
    if (!term) continue;
    for (let at = lower.indexOf(term); at !== -1; at = lower.indexOf(term, at + 1)) ranges.push([at, at + term.length]);
  }
  ranges.sort((a, b) => a[0] - b[0]);
  const first = ranges[0]?.[0] ?? 0;
  const start = Math.max(0, Math.min(first - Math.floor(width / 3), shown.length - width));
  const end = Math.min(shown.length, start + width);
  let out = "";
  let pos = start;
  for (const [from, to] of mergeRanges(ranges)) {
    if (to <= pos || from >= end) continue;
    const a = Math.max(from, pos);
    const b = Math.min(to, end);
    out += `${shown.slice(pos, a)}«${shown.slice(a, b)}»`;
    pos = b;
  }
  out += shown.slice(pos, end);
  return `${start > 0 ? "…" : ""}${out}${end < shown.length ? "…" : ""}`;
}

/** é → e, as the search itself folds them; only letters whose base is as long, so positions stay. */
function foldAccents(text: string): string {
  return text.replace(/[\u00c0-\u1eff]/g, (letter) => {
    const base = letter.normalize("NFD").replace(/\p{M}/gu, "");
    return base.length === letter.length ? base : letter;
  });
}

function mergeRanges(sorted: Array<[number, number]>): Array<[number, number]> {
  const merged: Array<[number, number]> = [];
  for (const [from, to] of sorted) {
    const last = merged.at(-1);
    if (last && from <= last[1]) last[1] = Math.max(last[1], to);
    else merged.push([from, to]);
  }
  return merged;
}
