import { formatLocal } from "./time-zone.js";

/** Opens the line of per-turn facts pincer appends to a user message (after the user's words, never in the system
 * prompt: a prompt that changes every minute is processed whole every turn). */
export const METADATA_OPEN = "\n\n[pincer metadata: ";

/** The user's words with this turn's facts appended: what is sent and stored, byte for byte. */
export function withTurnFacts(content: string, now: Date | number, timezone: string): string {
  return `${content}${METADATA_OPEN}current time ${formatLocal(now, timezone)} (${timezone})]`;
}

/** The user's words without the facts pincer appended (transcripts, the page). */
export function withoutTurnFacts(content: string): string {
  const at = content.lastIndexOf(METADATA_OPEN);
  const facts = at >= 0 ? content.slice(at + METADATA_OPEN.length) : "";
  return at >= 0 && facts.endsWith("]") && !facts.includes("\n") ? content.slice(0, at) : content;
}
