import { describe, expect, it } from "vitest";
import { openDatabase } from "./database.js";
import { buildFtsQuery, likePattern } from "./fts-query.js";

describe("buildFtsQuery", () => {
  it("quotes every word and joins them with OR", () => {
    expect(buildFtsQuery("sister's birthday")).toMatchObject({ match: '"sister" OR "birthday"', short: [] });
  });

  it("cuts unspaced scripts into trigrams, with bigrams for LIKE", () => {
    const q = buildFtsQuery("妹妹生日");
    expect(q.match).toBe('"妹妹生" OR "妹生日"');
    expect(q.short).toEqual(["妹妹", "妹生", "生日"]);
    expect(buildFtsQuery("生日").match).toBeUndefined();
    expect(buildFtsQuery("生日").short).toEqual(["生日"]);
  });

  it("handles emoji-only queries and keeps variation selectors with their emoji", () => {
    expect(buildFtsQuery("🎂🎉🎈").match).toBe('"🎂🎉🎈"');
    expect(buildFtsQuery("❤️").short).toEqual(["❤️"]);
  });

  it("leaves no FTS syntax from the input: every hostile query is valid and matches literally", () => {
    const db = openDatabase(":memory:");
    db.exec("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='trigram')");
    db.prepare("INSERT INTO t VALUES (?)").run("near the river, a star * in the sky");
    const hostile = [
      '"',
      '""""',
      'a" OR "b',
      "NEAR(river sky, 2)",
      "river*",
      "*",
      "(((river",
      "river)))",
      "x:river",
      "^river",
      "river AND NOT sky",
      "- river",
      "{x}: river",
      "'; DROP TABLE t; --",
      "\\",
      "🎂",
      "",
    ];
    for (const input of hostile) {
      const { match } = buildFtsQuery(input);
      if (match) expect(() => db.prepare("SELECT * FROM t WHERE t MATCH ?").all(match)).not.toThrow();
    }
    expect(buildFtsQuery("NEAR(river sky, 2)").match).toBe('"near" OR "river" OR "sky"');
    expect(buildFtsQuery("river*").match).toBe('"river"');
    expect(buildFtsQuery('a" OR "b').match).toBeUndefined();
    db.close();
  });

  it("escapes LIKE wildcards", () => {
    expect(likePattern("50%_a\\")).toBe("%50\\%\\_a\\\\%");
  });
});

describe("a long Chinese query", () => {
  it("keeps the LIKE scan to a dozen terms", () => {
    const q = buildFtsQuery("我妹妹的生日是三月五日我们要给她买一个很大的蛋糕然后去公园散步");
    expect(q.short.length).toBe(12);
    expect(q.match?.split(" OR ").length).toBeGreaterThan(12);
  });
});
