import type { Logger } from "pino";
import type { InboundMessage } from "../bus/types.js";
import type { ChatMessage } from "../llm/model.js";
import type { StoredMessage } from "../store/conversations.js";
import { readTextBeneath } from "../tools/files/safe-read.js";
import type { Skill } from "./skills.js";

/** The workspace files that make up the system prompt, in this order. */
export const BOOTSTRAP_FILES = ["AGENTS.md", "SOUL.md", "USER.md", "TOOLS.md", "MEMORY.md"];

/** A prompt file larger than this is skipped with a warning rather than filling the context. */
export const MAX_PROMPT_FILE_BYTES = 128 * 1024;

export interface PromptInput {
  workspace: string;
  skills: Skill[];
  timezone: string;
  now: Date;
  inbound: InboundMessage;
  /** Where a skipped prompt file is reported (a symlink, a FIFO, an oversized file). */
  log?: Pick<Logger, "warn">;
}

export function buildSystemPrompt({ workspace, skills, timezone, now, inbound, log }: PromptInput): string {
  const parts: string[] = [];
  for (const file of BOOTSTRAP_FILES) {
    // The workspace is the sandbox's to change: read without following links or blocking on a FIFO.
    const read = readTextBeneath(workspace, file, MAX_PROMPT_FILE_BYTES);
    if (read.ok) parts.push(`## ${file}\n\n${read.text.trim()}`);
    else if (!/does not exist/.test(read.reason)) log?.warn({ file, reason: read.reason }, "prompt file skipped");
  }
  if (skills.length > 0) {
    parts.push(
      [
        "## Skills",
        "",
        "Each skill is a SKILL.md with instructions. When a request matches a skill, read its file first.",
        ...skills.map((s) => `- ${s.name}: ${s.description} (${s.path})`),
      ].join("\n"),
    );
  }
  parts.push(
    [
      "## Runtime",
      "",
      `Current time: ${formatLocal(now, timezone)} (${timezone}).`,
      `Workspace: ${workspace}`,
      `Conversation: ${inbound.sessionKey} (${inbound.isGroup ? "group chat" : "direct chat"}).`,
    ].join("\n"),
  );
  return parts.join("\n\n");
}

/** What the model sees of an inbound message: its text, who wrote it in a group, and attachments. */
export function userContent(inbound: InboundMessage): string {
  const lines: string[] = [];
  if (inbound.channel === "system") lines.push(`[system: ${inbound.senderName}]`);
  else if (inbound.isGroup) lines.push(`[${inbound.senderName} (id ${inbound.senderId})]`);
  if (inbound.text) lines.push(inbound.text);
  for (const path of inbound.media) lines.push(`[attachment: ${path}]`);
  return lines.join("\n");
}

export function toChatMessage(m: StoredMessage): ChatMessage {
  if (m.role === "tool") return { role: "tool", content: m.content ?? "", tool_call_id: m.toolCallId ?? "" };
  if (m.role === "assistant") {
    return m.toolCalls?.length
      ? {
          role: "assistant",
          content: m.content,
          tool_calls: m.toolCalls.map((c) => ({
            id: c.id,
            type: "function" as const,
            function: { name: c.name, arguments: c.arguments },
          })),
        }
      : { role: "assistant", content: m.content ?? "" };
  }
  return { role: "user", content: m.content ?? "" };
}

export function formatLocal(date: Date, timezone: string): string {
  const parts = new Intl.DateTimeFormat("en-CA", {
    timeZone: timezone,
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    weekday: "short",
    hour: "2-digit",
    minute: "2-digit",
    hour12: false,
  }).formatToParts(date);
  const get = (type: string) => parts.find((p) => p.type === type)?.value ?? "";
  return `${get("weekday")} ${get("year")}-${get("month")}-${get("day")} ${get("hour")}:${get("minute")}`;
}
