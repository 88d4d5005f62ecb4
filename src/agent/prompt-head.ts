import type { ChatMessage } from "../llm/model.js";
import type { HistoryRow } from "../store/history-cache.js";

/** The history is trimmed in steps: once it overflows its room it drops to this share of it, so the next many turns
 * send the same start and the server's cache serves it (a turn at a time, every request would start anew). */
export const LOW_WATER = 0.5;

/** Where a trim of `rows` (the newest history, oldest first; not empty) puts the trim point: after it come the newest
 * rows whose tokens fit in `keep`, from a user message on, so no tool result loses its call. All go if none fits. */
export function trimPoint(rows: readonly HistoryRow[], keep: number): number {
  let from = rows.length;
  let used = 0;
  while (from > 0 && used + (rows[from - 1].message.tokens ?? 0) <= keep) used += rows[--from].message.tokens ?? 0;
  while (from < rows.length && rows[from].message.role !== "user") from++;
  // Ids only grow: everything before the first row kept goes, also what precedes `rows`.
  return from === rows.length ? rows[from - 1].id : rows[from].id - 1;
}

/** Consolidation's own sections of MEMORY.md (memory-file.ts): a dated heading and its facts. */
const LEARNED = /^(?:\n{1,2}## Learned \d{4}-\d{2}-\d{2}\n\n(?:- [^\n]*\n)+)+$/;

/** The MEMORY.md the prompt shows between trim points: what it showed (`shown`, null before the first turn), unless the
 * file changed otherwise than by consolidation appending what it learned (the owner's, or the agent's own, edit: shown
 * at once). `store`: the shown text changes and is to be remembered. */
export function memoryToShow(shown: string | null, current: string): { text: string; store: boolean } {
  if (shown === current) return { text: shown, store: false };
  // Both trimmed as the prompt shows them: the last fact's newline is put back.
  if (shown !== null && current.startsWith(shown) && LEARNED.test(`${current.slice(shown.length)}\n`)) {
    return { text: shown, store: false };
  }
  return { text: current, store: true };
}

/** The summaries of trimmed turns as they open the history (lines `- date: text`), or "" for none. */
export function summariesBlock(lines: string[]): string {
  if (lines.length === 0) return "";
  return [
    "[pincer: summaries of earlier turns of this conversation, which are no longer shown (memory_search finds details)]",
    ...lines,
    "[end of summaries]",
    "",
    "",
  ].join("\n");
}

/** `message` with the summaries before its text (the first user message of a request carries them). */
export function withSummaries(message: ChatMessage, block: string): ChatMessage {
  if (!block || message.role !== "user") return message;
  const { content } = message;
  if (typeof content === "string") return { ...message, content: block + content };
  const [first, ...rest] = content;
  if (first?.type === "text") return { ...message, content: [{ ...first, text: block + first.text }, ...rest] };
  return { ...message, content: [{ type: "text", text: block }, ...content] };
}
