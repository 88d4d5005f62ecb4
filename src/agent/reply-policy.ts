import { fenced } from "../approvals/policy.js";
import type { ModelReply } from "../llm/model.js";
import { execCommand } from "./progress.js";

/** What the loop does with a reply it cannot use as it is. A reply cut at the length limit never runs its tool calls
 * (their arguments may be half-written, and stored they would make the server refuse the conversation); a reply whose
 * only calls were thrown away says nothing. Either way the model is asked again, once per turn, with this note. */
export function askAgainNote(reply: ModelReply): string | undefined {
  if (reply.finishReason === "length" && (reply.toolCalls.length > 0 || reply.discarded?.length)) {
    return "Your last reply was cut off at the length limit while you were writing a tool call, so nothing was run. Make the call again with shorter arguments (split long content into several calls), or answer in text.";
  }
  if (reply.toolCalls.length === 0 && reply.content === "" && reply.discarded?.length) {
    return `Your last reply contained ${reply.discarded.join(" and ")}; nothing was run. Use one of the tools you are offered, through the tool-calling interface, or answer in text.`;
  }
  return undefined;
}

/** Whether the reply ends the turn: it asks for nothing, or it was cut (its calls are not run). */
export function isFinal(reply: ModelReply): boolean {
  return reply.toolCalls.length === 0 || reply.finishReason === "length";
}

/** The answer the user gets and the history keeps: a cut or filtered reply says so, visibly. */
export function finalText(reply: ModelReply): string {
  // OpenAI and Azure end a filtered answer so, empty or half-written: silence would look ignored.
  const note =
    reply.finishReason === "content_filter"
      ? "[the model's endpoint withheld the rest of this answer (content filter)]"
      : reply.finishReason !== "length"
        ? undefined
        : reply.toolCalls.length > 0 || reply.discarded?.length
          ? "[cut off at the length limit while writing a tool call; nothing was run]"
          : reply.content === ""
            ? "[cut off at the length limit before anything was said]"
            : "[cut off at the length limit]";
  if (note === undefined) return reply.content;
  return reply.content === "" ? note : `${reply.content}\n\n${note}`;
}

/** A promoted call's arguments shown up to this many characters: the notice must fit one chat message. */
const SHOWN_CALL_CHARS = 300;

/** What the chat is told before tool calls the model wrote as text run (the markup itself is never shown): each call,
 * exec as its command, any other tool as its name and arguments. */
export function textCallsNotice(calls: ReadonlyArray<{ name: string; arguments: string }>): string {
  const lines = calls.map((call) => {
    const command = execCommand(call);
    const shown = command === undefined ? `${call.name} ${call.arguments}` : `exec: ${command}`;
    return shown.length > SHOWN_CALL_CHARS
      ? `${shown.slice(0, SHOWN_CALL_CHARS)}… (${shown.length} characters)`
      : shown;
  });
  const what =
    calls.length === 1 ? "a tool call as text; running it" : `${calls.length} tool calls as text; running them`;
  return `The model wrote ${what} as written:\n${fenced(lines.join("\n"))}`;
}
