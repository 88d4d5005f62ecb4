import type { InboundMessage } from "../../src/bus/types.js";

/** What the bot does with a message, before access control: private chats always reach it. */
export type GroupDecision =
  | { answer: true }
  | { answer: false; reason: "group not in telegram.allowedGroups" | "not addressed to the bot" };

type GroupGateInput = Pick<InboundMessage, "isGroup" | "chatId" | "mentionsBot"> & {
  repliesToBot: boolean;
  isCommand: boolean;
  allowedGroups: string[]; // group chat ids the bot works in; empty means every group it was added to
};

/** In a group the bot speaks only when spoken to (an @mention, a reply, its /command); the rest stays unread. */
export function groupDecision(input: GroupGateInput): GroupDecision {
  if (!input.isGroup) return { answer: true };
  if (input.allowedGroups.length > 0 && !input.allowedGroups.includes(input.chatId)) {
    return { answer: false, reason: "group not in telegram.allowedGroups" };
  }
  if (input.mentionsBot || input.repliesToBot || input.isCommand) return { answer: true };
  return { answer: false, reason: "not addressed to the bot" };
}
