import { distance } from "fastest-levenshtein";

/** Lines 1-based and inclusive; `edits`: character edits between old_text and `text`. */
type NearMatch = { startLine: number; endLine: number; text: string; edits: number };

/** How many first-line candidates get a full comparison; keeps big files cheap. */
const CANDIDATES = 12;

/** The whole lines of `text` (as many as `needle` has) most like `needle`: picked by first line, compared whole. */
export function nearestMatch(text: string, needle: string): NearMatch | undefined {
  const lines = text.split("\n");
  const needleLines = needle.replace(/\n$/, "").split("\n");
  const span = needleLines.length;
  if (lines.length === 0 || needle.trim() === "") return undefined;
  const anchorIndex = needleLines.findIndex((line) => line.trim() !== "");
  const anchor = needleLines[anchorIndex].trim();

  const starts = lines
    .map((line, i) => ({ start: i - anchorIndex, score: distance(line.trim(), anchor) }))
    .filter(({ start }) => start >= 0 && start + span <= lines.length)
    .sort((a, b) => a.score - b.score)
    .slice(0, CANDIDATES);

  let best: NearMatch | undefined;
  for (const { start } of starts) {
    const candidate = lines.slice(start, start + span).join("\n");
    const edits = distance(candidate, needle.replace(/\n$/, ""));
    if (!best || edits < best.edits) best = { startLine: start + 1, endLine: start + span, text: candidate, edits };
  }
  return best;
}

/** Whether `needle` occurs in `text` once whitespace runs are ignored: the usual near miss. */
export function matchesIgnoringWhitespace(text: string, needle: string): boolean {
  const squash = (s: string) => s.replace(/\s+/g, " ").trim();
  return squash(needle) !== "" && squash(text).includes(squash(needle));
}
