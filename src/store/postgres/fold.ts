/**
 * The characters PostgreSQL's search folds, as SQLite's trigram index does with `remove_diacritics 1`: each Latin letter
 * with a diacritic becomes its base letter (é → e, Ø stays), and a combining accent on its own is dropped. As the two
 * arguments of translate(), so folding needs no extension (unaccent) and works in an index's expression.
 */
const folds = (first: number, last: number) =>
  Array.from({ length: last - first + 1 }, (_, i) => String.fromCodePoint(first + i))
    .map((letter) => [letter, letter.normalize("NFD").replace(/\p{M}/gu, "")])
    .filter(([letter, base]) => base.length === 1 && base !== letter);
const latin = [...folds(0x00c0, 0x024f), ...folds(0x1e00, 0x1eff)];
// translate() deletes the characters of `from` that have none in `to`: the combining accents go last.
const accents = Array.from({ length: 0x70 }, (_, i) => String.fromCodePoint(0x0300 + i)).join("");
const from = latin.map(([letter]) => letter).join("") + accents;
const to = latin.map(([, base]) => base).join("");

/** Creates `pincer_fold(text)`: immutable, so the search indexes can be built on what it returns. */
export const CREATE_FOLD_FUNCTION = `
  CREATE OR REPLACE FUNCTION pincer_fold(text) RETURNS text LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $fold$ SELECT translate($1, '${from}', '${to}') $fold$;`;
