import type { InboundMessage } from "../../src/bus/types.js";

type GroupGateInput = Pick<InboundMessage, "isGroup" | "chatId" | "mentionsBot"> & {
  repliesToBot: boolean;
  isCommand: boolean;
  allowedGroups: string[]; // group chat ids the bot works in; empty means every group it was added to
};

/** Why the bot leaves a message unread, before access control: in a group it speaks only when spoken to (an @mention,
 * a reply, its /command); private chats always reach it. */
export function groupRefusal(input: GroupGateInput): string | undefined {
  if (!input.isGroup) return undefined;
  if (input.allowedGroups.length > 0 && !input.allowedGroups.includes(input.chatId))
    return "group not in telegram.allowedGroups";
  return input.mentionsBot || input.repliesToBot || input.isCommand ? undefined : "not addressed to the bot";
}
