import { join } from "node:path";

/** The message contracts every channel and the agent share (names fixed by design.md). */
export type ChannelName = "telegram" | "discord" | "console" | "web" | "system";

export interface InboundMessage {
  /** Unique per platform message; the inbox uses it to drop replays. */
  id: string;
  channel: ChannelName;
  chatId: string;
  senderId: string;
  senderName: string;
  text: string;
  /** Local paths of downloaded attachments. */
  media: string[];
  replyToId?: string;
  isGroup: boolean;
  mentionsBot: boolean;
  receivedAt: number;
  /** `channel:chatId`, plus `:thread:ID` for threads/topics, or the session a system message is addressed to. */
  sessionKey: string;
  /** Facts only some producers set (a scheduled job's id, a quote). */
  meta?: Record<string, string>;
}

/** A button under a message; `data` is what a tap reports back (at most 64 bytes: Telegram's limit). */
export interface Button {
  label: string;
  data: string;
}

export interface OutboundMessage {
  channel: ChannelName;
  chatId: string;
  text: string;
  replyToId?: string;
  media?: string[];
  kind: "reply" | "progress" | "notice";
  /** The thread/topic inside chatId, when the conversation lives in one. */
  threadId?: string;
  /** Set on the notice of a turn that could not be answered (the text says why); scripts exit non-zero. */
  failed?: boolean;
  /** Rows of buttons under the message (on its last part). */
  buttons?: Button[][];
  /** The message this replaces, text and buttons (none removes them): an outbox row's first, or a platform id. */
  editOf?: { outboxId: number } | { messageId: string };
  /** The draft's messages: the reply's parts replace them in order (one deleted is posted again), leftovers go. */
  draftIds?: string[];
}

/** Someone tapped a button under one of pincer's messages. */
export interface ButtonTap {
  /** The platform's id of the tap (callback query / interaction): replays are taken once. */
  id: string;
  channel: ChannelName;
  chatId: string;
  threadId?: string;
  senderId: string;
  senderName: string;
  isGroup: boolean;
  messageId: string;
  data: string;
  /** As the platform shows it; none on a message too old to show its keyboard. */
  label?: string;
  receivedAt: number;
}

/** What the tapper alone is told (a toast on Telegram, an ephemeral reply on Discord). */
export type TapAnswer = { text?: string };

export type TapHandler = (tap: ButtonTap) => Promise<TapAnswer>;

/** What a channel reports once it has sent a message: the platform's ids for what it posted. */
export interface DeliveryReceipt {
  messageIds: string[];
  /** Set when the platform refused the message for good (it was dropped): the platform's words. */
  refused?: string;
}

/** An outbound message refused for good (dropped), failed for now (kept in the outbox), or queued (no channel runs). */
export type DeliveryOutcome =
  | { status: "sent"; messageIds: string[] }
  | { status: "refused"; error: string }
  | { status: "failed"; error: string }
  | { status: "queued" };

/** A turn started or ended for a chat; channels use it for typing indicators. */
export interface ActivityEvent {
  channel: ChannelName;
  chatId: string;
  threadId?: string;
  sessionKey: string;
  busy: boolean;
}

export function sessionKeyOf(channel: ChannelName, chatId: string, threadId?: string): string {
  return threadId ? `${channel}:${chatId}:thread:${threadId}` : `${channel}:${chatId}`;
}

/** The inverse of sessionKeyOf. */
export function parseSessionKey(key: string): { channel: ChannelName; chatId: string; threadId?: string } | undefined {
  const m = /^(telegram|discord|console|web|system):(.+?)(?::thread:(.+))?$/.exec(key);
  if (!m) return undefined;
  return { channel: m[1] as ChannelName, chatId: m[2], threadId: m[3] };
}

/** One conversation's received files under media/: only its tools see them (the sandbox mounts no other folder). */
export function conversationMediaDir(mediaDir: string, sessionKey: string): string {
  return join(mediaDir, sessionKey.replace(/[^\w-]/g, "_"));
}

/** Where a message's answers go: its session's chat, or the one a run in a session of its own (heartbeat) names. */
export function replyTarget(msg: InboundMessage): Pick<OutboundMessage, "channel" | "chatId" | "threadId"> {
  const to = msg.meta?.deliverTo;
  return (to && parseSessionKey(to)) || parseSessionKey(msg.sessionKey) || { channel: msg.channel, chatId: msg.chatId };
}

/** What was thrown, in words for a log line or an error result. */
export const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** How much of a replied-to message the model is shown. */
const QUOTE_CHARS = 300;

/** What a reply answers (so "by that?" has a "that"), as meta: on one line, cut short, marked as pincer's own words,
 * the sender's, or someone else's. */
export function quoteMeta(text: string, from: string, trust: "bot" | "self" | "other"): Record<string, string> {
  const flat = text.replace(/\s+/g, " ").trim();
  if (!flat) return {};
  const quotedText = flat.length > QUOTE_CHARS ? `${flat.slice(0, QUOTE_CHARS)}…` : flat;
  return { quotedText, quotedFrom: from, quotedTrust: trust };
}
