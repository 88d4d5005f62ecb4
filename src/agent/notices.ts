import type { OutboundMessage } from "../bus/types.js";
import type { ModelError } from "../llm/model.js";
import { UsageLimitError } from "../usage/meter.js";

type Target = Pick<OutboundMessage, "channel" | "chatId" | "threadId">;

/** A message pincer writes itself (command answers, stops, set-aside messages), not the model. */
export function notice(target: Target, text: string): OutboundMessage {
  return { ...target, kind: "notice", text };
}

/** The notice of a turn that could not be answered; scripts (`pincer agent -m`) exit non-zero on it. */
export function failure(target: Target, text: string): OutboundMessage {
  return { ...notice(target, text), failed: true };
}

/** The model answered only with the run's "nothing to say" token (markdown or a full stop around it allowed). */
export function isSilentReply(text: string, token: string | undefined): boolean {
  return token !== undefined && text.replace(/^[\s*_`]+|[\s*_`.!]+$/g, "") === token;
}

export const POISON_NOTICE =
  "Sorry, I have set your message aside: pincer stopped twice while working on it. Please try again, perhaps in smaller steps.";

/** The one notice of a message given up: why, and what the user can do about it. */
export function giveUpNotice(kind: "outage" | "refused", reason: string, waitedMs: number, scheduled = false): string {
  if (scheduled) return `Sorry, a scheduled task could not run: ${reason}. I have set it aside.`;
  if (kind === "outage") {
    return `Sorry, the model has not answered for ${formatDuration(waitedMs)} (${reason}), so I have set your message aside. Please send it again when the model is back.`;
  }
  return `Sorry, I could not get an answer to your message: ${reason}. I have set it aside; send it again rephrased, or /new to start over.`;
}

/** The notice of a turn the model failed ("try again in a moment" only when waiting may help); a used-up budget tells a
 * chat once a period (none when told). */
export function modelFailure(target: Target, err: ModelError): OutboundMessage | undefined {
  if (err instanceof UsageLimitError) return err.notice === undefined ? undefined : failure(target, err.notice);
  return failure(target, `Sorry, ${err.message}.${err.permanent ? "" : " Please try again in a moment."}`);
}

export function formatDuration(ms: number): string {
  const minutes = Math.round(ms / 60_000);
  if (minutes < 1) return `${Math.max(1, Math.round(ms / 1000))} s`;
  return minutes < 120 ? `${minutes} min` : `${Math.round(minutes / 60)} h`;
}

/** The answer to /new; `setAside` messages that waited for the model were closed with it. */
export function newConversationNotice(setAside: number): string {
  const started = "Started a new conversation. Long-term memory is kept.";
  if (setAside === 0) return started;
  const waited =
    setAside === 1
      ? "The message that waited for the model is"
      : `The ${setAside} messages that waited for the model are`;
  return `${started} ${waited} set aside.`;
}
