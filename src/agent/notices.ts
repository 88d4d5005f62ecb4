import type { OutboundMessage } from "../bus/types.js";

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

/** Turns of one message that may be cut off by a crash before it is set aside. */
export const MAX_TURN_STARTS = 2;

export const POISON_NOTICE =
  "Sorry, I have set your message aside: pincer stopped twice while working on it. Please try again, perhaps in smaller steps.";
