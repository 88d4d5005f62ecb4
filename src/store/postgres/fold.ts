/**
 * The characters PostgreSQL's search folds, as SQLite's trigram index does with `remove_diacritics 1`: each Latin letter
 * with a diacritic becomes its base letter (é → e, Ø stays), and a combining accent on its own is dropped. As the two
 * arguments of translate(), so folding needs no extension (unaccent) and works in an index's expression.
 */
function foldTable(): { from: string; to: string } {
  let from = "";
  let to = "";
  const latin = [
    [0x00c0, 0x024f],
    [0x1e00, 0x1eff],
  ];
  for (const [first, last] of latin) {
    for (let code = first; code <= last; code++) {
      const letter = String.fromCodePoint(code);
      const base = letter.normalize("NFD").replace(/\p{M}/gu, "");
      if (base.length === 1 && base !== letter) {
        from += letter;
        to += base;
      }
    }
  }
  // translate() deletes the characters of `from` that have none in `to`: the combining accents go last.
  for (let code = 0x0300; code <= 0x036f; code++) from += String.fromCodePoint(code);
  return { from, to };
}

const { from, to } = foldTable();

/** Creates `pincer_fold(text)`: immutable, so the search indexes can be built on what it returns. */
export const CREATE_FOLD_FUNCTION = `
  CREATE OR REPLACE FUNCTION pincer_fold(text) RETURNS text LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $fold$ SELECT translate($1, '${from}', '${to}') $fold$;`;
