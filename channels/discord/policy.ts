import { sessionKeyOf } from "../../src/bus/types.js";

/** What the adapter knows about a Discord message when it decides whether pincer should see it. */
export interface MessageFacts {
  authorId: string;
  authorIsBot: boolean;
  /** Set for messages in a server (guild); absent in DMs. */
  guildId?: string;
  channelId: string;
  /** The parent text channel when the message is in a thread. */
  parentId?: string;
  /** The bot's user was mentioned explicitly (`<@id>`). */
  mentionsBot: boolean;
  /** The message replies to one of the bot's own messages. */
  repliesToBot: boolean;
}

export interface GuildPolicy {
  botId: string;
  allowBots: boolean;
  /** Channel (or parent channel) ids the bot may answer in; empty means every channel. */
  allowedChannels: string[];
}

export type Verdict =
  | { handle: true }
  | { handle: false; reason: "own message" | "bot" | "channel not allowed" | "not addressed" };

/**
 * Which messages reach access control at all: never the bot's own, other bots only when
 * allowed, in servers only in allowed channels and only when the bot is mentioned or replied to.
 * Every DM is addressed to the bot.
 */
export function decide(facts: MessageFacts, policy: GuildPolicy): Verdict {
  if (facts.authorId === policy.botId) return { handle: false, reason: "own message" };
  if (facts.authorIsBot && !policy.allowBots) return { handle: false, reason: "bot" };
  if (facts.guildId === undefined) return { handle: true };
  const allowed = policy.allowedChannels;
  if (
    allowed.length > 0 &&
    !allowed.includes(facts.channelId) &&
    !(facts.parentId && allowed.includes(facts.parentId))
  ) {
    return { handle: false, reason: "channel not allowed" };
  }
  if (!facts.mentionsBot && !facts.repliesToBot) return { handle: false, reason: "not addressed" };
  return { handle: true };
}

/** Where a message's conversation lives: threads keep their own session under the parent channel. */
export function conversationOf(facts: Pick<MessageFacts, "channelId" | "parentId">): {
  chatId: string;
  threadId?: string;
  sessionKey: string;
} {
  const [chatId, threadId] = facts.parentId ? [facts.parentId, facts.channelId] : [facts.channelId, undefined];
  return { chatId, ...(threadId ? { threadId } : {}), sessionKey: sessionKeyOf("discord", chatId, threadId) };
}

/**
 * The text the model sees: the bot's own mention (`<@id>` or the legacy `<@!id>`) removed,
 * other user mentions turned into readable `@name`s.
 */
export function cleanContent(content: string, botId: string, names: ReadonlyMap<string, string>): string {
  return content
    .replace(/<@!?(\d+)>/g, (whole, id: string) => {
      if (id === botId) return "";
      const name = names.get(id);
      return name ? `@${name}` : whole;
    })
    .replace(/[ \t]{2,}/g, " ")
    .trim();
}

/** How much of a quoted message the model sees when the user replies to a message. */
const QUOTE_CHARS = 300;

/**
 * A reply carries a short quote of what it replies to, so "what did you mean by that?" has a
 * "that": as InboundMessage.meta, with whose words they are (pincer's, the sender's, or another's).
 */
export function quoteOf(authorName: string, content: string, trust: "bot" | "self" | "other"): Record<string, string> {
  const flat = content.replace(/\s+/g, " ").trim();
  if (!flat) return {};
  const text = flat.length > QUOTE_CHARS ? `${flat.slice(0, QUOTE_CHARS)}…` : flat;
  return { quotedText: text, quotedFrom: authorName, quotedTrust: trust };
}
