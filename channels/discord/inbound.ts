import type { Message } from "discord.js";
import type { Logger } from "pino";
import { inOrderPerKey } from "../../src/bus/in-order.js";
import type { Switchboard } from "../../src/bus/switchboard.js";
import { conversationMediaDir, type InboundMessage, onAccount, type Quote, quotation } from "../../src/bus/types.js";
import { inboundRetries, untilStored } from "../../src/bus/until-stored.js";
import { downloadAttachments } from "./attachments.js";
import { MessageReferenceType, MessageType } from "./library.js";
import { cleanContent, conversationOf, type GuildPolicy, type MessageFacts, whyIgnored } from "./policy.js";

/** User messages; joins, pins, boosts and other system messages never reach the model. */
const CONVERSATION_TYPES = new Set([MessageType.Default, MessageType.Reply]);

/** Discord messages to the bus, one conversation's in the order they came even while one waits for its files. */
export function createInboundHandler(deps: {
  bus: Switchboard;
  log: Logger;
  guildPolicy: Omit<GuildPolicy, "botId">;
  /** Where attachments go (each conversation's folder under `dir`), their limits and DISCORD_API_URL. */
  media: Omit<Parameters<typeof downloadAttachments>[1], "messageId">;
  botId: () => string;
  /** Aborted when the channel stops: until then a message's store write is retried (Discord does not resend it). */
  signal: () => AbortSignal;
  /** The bot's account (config `accounts`), absent for DISCORD_BOT_TOKEN's. */
  account?: string;
}) {
  const inOrder = inOrderPerKey();

  async function process(message: Message, facts: MessageFacts, sessionKey: string): Promise<void> {
    const conversation = conversationOf(facts);
    const received: InboundMessage = {
      id: message.id,
      channel: "discord",
      ...(facts.guildId ? { guildId: facts.guildId } : {}),
      chatId: conversation.chatId,
      senderId: facts.authorId,
      senderName: message.member?.displayName ?? message.author.displayName ?? message.author.username,
      text: "",
      media: [],
      replyToId: message.reference?.messageId ?? undefined,
      isGroup: facts.guildId !== undefined,
      mentionsBot: facts.guildId === undefined || facts.mentionsBot || facts.repliesToBot,
      receivedAt: message.createdTimestamp || Date.now(),
      sessionKey: conversation.sessionKey,
    };
    // The store may be away (the gate reads it too): both calls are retried until it answers.
    const retries = inboundRetries(deps.log, deps.signal());
    // Before any download: a stranger's files are never fetched (the gate answers them itself).
    const envelope = await untilStored(() => deps.bus.screenInbound(onAccount(received, deps.account)), retries);
    if (!envelope) return;
    const names = new Map(
      message.mentions.users.map((user) => [
        user.id,
        message.mentions.members?.get(user.id)?.displayName ?? user.displayName,
      ]),
    );
    const forwarded =
      message.reference?.type === MessageReferenceType.Forward ? message.messageSnapshots.first() : undefined;
    const files = forwarded ? forwarded.attachments : message.attachments;
    const attachments = await downloadAttachments([...files.values()], {
      ...deps.media,
      dir: conversationMediaDir(deps.media.dir, envelope.sessionKey),
      messageId: message.id,
    });
    const content = forwarded ? (forwarded.content ?? "") : message.content;
    const text = [cleanContent(content, deps.botId(), names), ...attachments.notes].filter(Boolean).join("\n");
    // The screened message itself goes on: the bus knows it by identity and does not ask the gate again.
    const inbound = Object.assign(envelope, {
      text,
      media: attachments.paths,
      ...(forwarded ? { forwardedFrom: "another Discord chat" } : quoted(message, deps.botId())),
    });
    if (!(await untilStored(() => deps.bus.publishInbound(inbound), retries)))
      deps.log.debug({ id: message.id, sessionKey }, "not accepted: a replayed message, or refused by the gate");
  }

  return function handle(message: Message): void {
    if (message.partial || !CONVERSATION_TYPES.has(message.type)) return;
    const botId = deps.botId();
    const facts = factsOf(message, botId);
    const ignored = whyIgnored(facts, { ...deps.guildPolicy, botId });
    if (ignored) {
      if (ignored !== "own message") deps.log.debug({ id: message.id, reason: ignored }, "message ignored");
      return;
    }
    const { sessionKey } = conversationOf(facts);
    void inOrder(sessionKey, () =>
      process(message, facts, sessionKey).catch((err: unknown) =>
        deps.log.error({ err, id: message.id, sessionKey }, "could not accept a Discord message"),
      ),
    );
  };
}

function factsOf(message: Message, botId: string): MessageFacts {
  const channel = message.channel;
  return {
    authorId: message.author.id,
    authorIsBot: message.author.bot || message.webhookId !== null,
    guildId: message.guildId ?? undefined,
    channelId: message.channelId,
    parentId: channel.isThread() ? (channel.parentId ?? undefined) : undefined,
    mentionsBot: new RegExp(`<@!?${botId}>`).test(message.content),
    repliesToBot: message.mentions.repliedUser?.id === botId,
  };
}

function quoted(message: Message, botId: string): { quote?: Quote } {
  const referenceId = message.reference?.messageId;
  if (!referenceId) return {};
  // Discord sends the replied-to message along; discord.js caches it in the channel.
  const original = message.channel.messages.cache.get(referenceId);
  if (!original) return {};
  const author = original.author.id;
  const trust = author === botId ? "bot" : author === message.author.id ? "self" : "other";
  return quotation(original.content, original.member?.displayName ?? original.author.displayName, trust);
}
