/** What a text costs in tokens, estimated from its kinds of characters in one pass: o200k_base's tables took ~50 MB and
 * ~0.2 s to load. Weights fitted against o200k_base, an undercount weighing six times an overcount: within 0.85–1.3× per
 * kind of text. The endpoint's usage corrects the rest (`TokenCounter.calibrate`). The fit and its figures, by kind of
 * text: docs/benchmarks.md, "Counting tokens". */

// Tokens per feature of the text.
const WORD = 1.1; // an ASCII word of four letters or more (shorter ones mostly merge with a space or a sign)
const LONG_WORD_LETTER = 0.12; // each letter of a word past its eighth
const CASE_CHANGE = 1.95; // a capital after a small letter inside a word (camelCase, base64): it splits there
const LETTER_DIGIT = 0.52; // a letter next to a digit (ids, hex, base64)
const DIGIT_GROUP = 1.2; // each started group of three digits: numbers are split that way
const SIGN = 0.46; // each ASCII sign or punctuation mark
const SPACE_RUN = 0.69; // each run of spaces, tabs or line breaks
const ASTRAL = 1.81; // each character outside the BMP (emoji, rare CJK): a surrogate pair
const OTHER = 0.54; // anything else: symbols, dingbats, joiners, variation selectors

/** Non-ASCII characters of the BMP by script: [first, last, tokens per character]. */
const SCRIPTS: ReadonlyArray<readonly [number, number, number]> = [
  [0x00c0, 0x024f, 2.47], // Latin letters with accents (they split the word around them)
  [0x0370, 0x03ff, 0.48], // Greek
  [0x0400, 0x052f, 0.33], // Cyrillic
  [0x0590, 0x05ff, 0.61], // Hebrew
  [0x0600, 0x06ff, 0.35], // Arabic
  [0x0750, 0x077f, 0.35],
  [0x0900, 0x0dff, 0.33], // Indic scripts
  [0x0e00, 0x0e7f, 0.57], // Thai
  [0x1100, 0x11ff, 0.73], // Hangul jamo
  [0x1e00, 0x1eff, 2.47], // more accented Latin (Vietnamese)
  [0x1f00, 0x1fff, 0.48], // Greek with accents
  [0x3000, 0x30ff, 0.88], // CJK punctuation, kana
  [0x3130, 0x318f, 0.73], // Hangul compatibility jamo
  [0x3400, 0x9fff, 0.88], // CJK ideographs
  [0xac00, 0xd7af, 0.73], // Hangul syllables
  [0xf900, 0xfaff, 0.88], // CJK compatibility ideographs
  [0xff00, 0xffef, 0.88], // full-width forms
];

const [LOWER, UPPER, DIGIT, SPACE, SIGN_KIND, NON_ASCII] = [1, 2, 3, 4, 5, 6];
const ASCII_KIND = Uint8Array.from({ length: 128 }, (_, code) => {
  const c = String.fromCharCode(code);
  if (/[a-z]/.test(c)) return LOWER;
  if (/[A-Z]/.test(c)) return UPPER;
  if (/\d/.test(c)) return DIGIT;
  return /[ \t\n\r]/.test(c) ? SPACE : SIGN_KIND;
});

function nonAsciiWeight(code: number): number {
  if (code >= 0xd800 && code <= 0xdbff) return ASTRAL;
  if (code >= 0xdc00 && code <= 0xdfff) return 0; // counted with its pair
  for (const [first, last, weight] of SCRIPTS) {
    if (code < first) return OTHER;
    if (code <= last) return weight;
  }
  return OTHER;
}

const wordCost = (letters: number) => (letters < 4 ? 0 : WORD + LONG_WORD_LETTER * Math.max(0, letters - 8));
const digitCost = (digits: number) => DIGIT_GROUP * Math.ceil(digits / 3);

/** Estimated tokens of `text` (o200k_base-like), rounded up: 0 for an empty text, else at least 1. */
export function estimateTokens(text: string): number {
  let tokens = 0;
  let previous = 0;
  let letters = 0;
  let digits = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    const kind = code < 128 ? ASCII_KIND[code] : NON_ASCII;
    if (kind === LOWER || kind === UPPER) {
      if (kind === UPPER && previous === LOWER) tokens += CASE_CHANGE;
      else if (previous === DIGIT) tokens += LETTER_DIGIT + digitCost(digits);
      digits = 0;
      letters++;
      previous = kind;
      continue;
    }
    // A word or a number is priced where it ends.
    tokens += wordCost(letters);
    letters = 0;
    if (kind === DIGIT) {
      if (previous === LOWER || previous === UPPER) tokens += LETTER_DIGIT;
      digits++;
    } else {
      tokens += digitCost(digits);
      digits = 0;
      if (kind === SPACE) tokens += previous === SPACE ? 0 : SPACE_RUN;
      else tokens += kind === SIGN_KIND ? SIGN : nonAsciiWeight(code);
    }
    previous = kind;
  }
  tokens += wordCost(letters) + digitCost(digits);
  return text.length === 0 ? 0 : Math.max(1, Math.ceil(tokens));
}
