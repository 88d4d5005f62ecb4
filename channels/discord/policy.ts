import { sessionKeyOf } from "../../src/bus/types.js";

/** What decides whether pincer sees a Discord message; no guildId in DMs, parentId in a thread. */
export interface MessageFacts {
  authorId: string;
  authorIsBot: boolean;
  guildId?: string;
  channelId: string;
  parentId?: string;
  mentionsBot: boolean; // `<@id>` of the bot
  repliesToBot: boolean;
}

export interface GuildPolicy {
  botId: string;
  allowBots: boolean;
  allowedChannels: string[]; // channel (or parent channel) ids the bot may answer in; empty means every channel
}

/** Why a message does not reach access control, undefined when it does: never the bot's own, other bots only when
 * allowed, in servers only in allowed channels and only when the bot is mentioned or replied to; every DM. */
export function whyIgnored(facts: MessageFacts, policy: GuildPolicy): string | undefined {
  if (facts.authorId === policy.botId) return "own message";
  if (facts.authorIsBot && !policy.allowBots) return "bot";
  if (facts.guildId === undefined) return undefined;
  const allowed = policy.allowedChannels;
  const listed = allowed.includes(facts.channelId) || (facts.parentId && allowed.includes(facts.parentId));
  if (allowed.length > 0 && !listed) return "channel not allowed";
  return facts.mentionsBot || facts.repliesToBot ? undefined : "not addressed";
}

/** Where a message's conversation lives: threads keep their own session under the parent channel. */
export function conversationOf(facts: Pick<MessageFacts, "channelId" | "parentId">) {
  const [chatId, threadId] = facts.parentId ? [facts.parentId, facts.channelId] : [facts.channelId, undefined];
  return { chatId, ...(threadId ? { threadId } : {}), sessionKey: sessionKeyOf("discord", chatId, threadId) };
}

/** The text the model sees: the bot's own mention (`<@id>`, legacy `<@!id>`) removed with the one space after it, others
 * as readable `@name`s. Every other space is the user's: pasted code and YAML keep their indentation. */
export function cleanContent(content: string, botId: string, names: ReadonlyMap<string, string>): string {
  const cleaned = content
    .replace(new RegExp(`(^|[ \\t])<@!?${botId.replace(/\D/g, "")}>(?:[ \\t]|$)`, "gm"), "$1")
    .replace(/<@!?(\d+)>/g, (whole, id: string) => {
      if (id === botId) return "";
      const name = names.get(id);
      return name ? `@${name}` : whole;
    })
    .replace(/^(?:[ \t]*\n)+/, "")
    .trimEnd();
  return cleaned.trim() === "" ? "" : cleaned;
}
