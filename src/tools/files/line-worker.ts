/** Worker-thread entry (see line-search.ts): matches lines of text it is sent; it never touches a file. */
import { RE2JS } from "re2js";
import { serveTasks } from "../worker-pool.js";

export type LineTask = { pattern: string; text: string; max: number };

/** This thread's last compiled pattern: one grep sends the same pattern with every file. */
let last: { pattern: string; re: RE2JS } | undefined;

/** 0-based numbers of the lines that match, at most `max`; a string when the pattern does not compile. */
serveTasks(({ pattern, text, max }: LineTask): number[] | string => {
  try {
    if (last?.pattern !== pattern) last = { pattern, re: RE2JS.compile(pattern) };
  } catch (err) {
    return String((err as Error).message);
  }
  const hits: number[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length && hits.length < max; i++) if (last.re.test(lines[i])) hits.push(i);
  return hits;
});
