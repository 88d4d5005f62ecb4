import { parseJson } from "../llm/text-tool-calls.js";
import type { PendingMessage } from "../store/store.js";
import { safeSlice } from "../text.js";
import { withoutTurnFacts } from "../turn-facts.js";

const MAX_SUMMARY_CHARS = 4000;
const MAX_FACT_CHARS = 300;
const MAX_FACTS = 12;

export const CONSOLIDATION_INSTRUCTIONS = [
  "You maintain the long-term memory of a personal assistant. Below is the oldest part of a chat",
  "that is about to leave the assistant's context window. Reply with one JSON object and nothing else:",
  '{"summary": "…", "facts": ["…"]}',
  "- summary: what happened and what matters for later (decisions, requests, results, open tasks),",
  "  in a few sentences, in the language the user wrote in. Keep names, dates and numbers.",
  "- facts: lasting facts about the user worth remembering in every future chat (preferences,",
  "  people, birthdays, projects), one short sentence each; leave out what MEMORY.md already says",
  "  and anything temporary. [] when there are none.",
].join("\n");

/** One line per message: who said it and when; tool output only briefly (it can be re-run). */
export function transcript(messages: PendingMessage[], formatTime: (ms: number) => string): string {
  const lines: string[] = [];
  for (const m of messages) {
    const when = formatTime(m.createdAt);
    if (m.role === "user") lines.push(`[${when}] User: ${withoutTurnFacts(m.content ?? "")}`);
    else if (m.role === "assistant") {
      if (m.content) lines.push(`[${when}] Assistant: ${m.content}`);
      for (const call of m.toolCalls ?? []) {
        lines.push(`[${when}] Assistant used ${call.name}(${safeSlice(call.arguments, 0, 200)})`);
      }
    } else {
      const text = m.content ?? "";
      lines.push(`  → result: ${safeSlice(text, 0, 300)}${text.length > 300 ? " …" : ""}`);
    }
  }
  return lines.join("\n");
}

/** The model's answer; anything but the JSON object asked for (prose, an empty or huge summary, facts that are not
 * short strings) is refused, so a confused model never replaces turns with garbage: it is retried later instead. */
export function parseConsolidation(reply: string): { summary: string; facts: string[] } | undefined {
  const body = reply
    .trim()
    .replace(/^```(?:json)?\s*/i, "")
    .replace(/\s*```$/, "");
  const data = parseJson(body);
  if (typeof data !== "object" || data === null) return undefined;
  const { summary, facts } = data as { summary?: unknown; facts?: unknown };
  const cleanSummary = typeof summary === "string" ? summary.trim() : "";
  if (cleanSummary.length < 2 || cleanSummary.length > MAX_SUMMARY_CHARS) return undefined;
  const list: unknown = facts ?? [];
  if (!Array.isArray(list) || list.length > MAX_FACTS * 2 || list.some((f) => typeof f !== "string")) return undefined;
  const cleanFacts = (list as string[])
    .map((f) => f.replace(/\s+/g, " ").trim())
    .filter((f) => f.length > 0 && f.length <= MAX_FACT_CHARS)
    .slice(0, MAX_FACTS);
  return { summary: cleanSummary, facts: cleanFacts };
}
