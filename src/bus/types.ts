import { join } from "node:path";
import { clip } from "../text.js";

/** The message contracts every channel and the agent share (names fixed: every channel depends on them). */
export type ChannelName = "telegram" | "discord" | "console" | "web" | "system";

interface MessageFields {
  /** Unique per platform message; the inbox uses it to drop replays. */
  id: string;
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
  /** `channel:chatId`, plus `:thread:ID` for threads/topics, or the session a system message is addressed to; the
   * agent that answers and the bot's account are part of it (agentSessionKey, sessionKeyOf). */
  sessionKey: string;
  /** The bot it was written to, when not the channel's default one (config `accounts`). */
  account?: string;
  /** Discord: the server (guild) it was written in, for `bindings`. */
  guildId?: string;
  /** Who wrote it and their role (config `roles`), as the access gate found them (src/access/roles.ts). */
  person?: PersonRef;
}

/** A person (the store's people) and the role their turns run with. */
export interface PersonRef {
  id: string;
  role: string;
}

/** The message a reply answers (so "by that?" has a "that"): pincer's own words, the sender's, or someone else's. */
export interface Quote {
  text: string;
  from: string;
  trust: "bot" | "self" | "other";
}

/** Someone wrote in a chat: a platform, the terminal or the web chat. */
export interface PersonMessage extends MessageFields {
  channel: Exclude<ChannelName, "system">;
  quote?: Quote;
  /** Whose words a forwarded message carries (untrusted). */
  forwardedFrom?: string;
}

/** A scheduled job's or reminder's run, due now (the message's id is the run's). `userId`: the person it runs for. */
export interface CronRun {
  kind: "cron";
  jobId: string;
  scheduledAt: number;
  /** Told to the user if the run is refused (a used-up budget): a reminder is not lost unsaid. */
  reminder?: string;
  userId?: string;
}

/** The periodic check of HEARTBEAT.md: its session is its own, its answers go to `deliverTo`, `silentReply` sends none. */
export interface HeartbeatRun {
  kind: "heartbeat";
  deliverTo: string;
  silentReply?: string;
}

/** A background helper's result, relayed to the conversation that started it (or where that run's answers went). */
export interface HelperResult {
  kind: "helper";
  runId: string;
  /** How it ended (the store's HelperStatus). */
  status: string;
  userId?: string;
  deliverTo?: string;
}

export type SystemRun = CronRun | HeartbeatRun | HelperResult;

/** A run pincer addresses to a conversation itself; no person sent it. */
export interface SystemMessage extends MessageFields {
  channel: "system";
  run: SystemRun;
}

export type InboundMessage = PersonMessage | SystemMessage;

/** A button under a message; `data` is what a tap reports back (at most 64 bytes: Telegram's limit). */
export interface Button {
  label: string;
  data: string;
}

export interface OutboundMessage {
  channel: ChannelName;
  /** The bot that sends it, when not the channel's default one. */
  account?: string;
  /** The agent whose conversation it answers, when not main: the web chat shows each agent's replies in its own chat. */
  agent?: string;
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
  /** The reply spoken: sent as a voice note with the text (its caption, or beside it). */
  voice?: VoiceNote;
}

/** A spoken reply, ready for the platforms: an OGG/Opus file, its length, and its waveform for Discord. */
export interface VoiceNote {
  path: string;
  seconds: number;
  /** Base64 of up to 256 levels (0–255), as Discord's voice messages show. */
  waveform: string;
}

/** Someone tapped a button under one of pincer's messages; `id` is the tap's (callback query / interaction): replays
 * are taken once. */
export interface ButtonTap
  extends Pick<
    PersonMessage,
    "id" | "channel" | "account" | "chatId" | "guildId" | "senderId" | "senderName" | "isGroup" | "receivedAt"
  > {
  threadId?: string;
  messageId: string;
  data: string;
  /** As the platform shows it; none on a message too old to show its keyboard. */
  label?: string;
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
export interface ActivityEvent extends Pick<OutboundMessage, "channel" | "account" | "chatId" | "threadId"> {
  sessionKey: string;
  busy: boolean;
}

/** The agent that today's settings are: without config `agents` the only one, and its keys carry no agent. */
export const MAIN_AGENT = "main";

/** An agent's or an account's name (config `agents`, `accounts`): it becomes part of keys and paths. */
const NAME = "[a-z0-9][a-z0-9_-]{0,31}";

/** Which bot of a channel: `telegram` for the channel's default one, `telegram@ACCOUNT` for another (config
 * `accounts`). Outbox rows, senders, typing, pairing, allowlists and cluster roles are each a route's. */
export function routeOf({ channel, account }: { channel: string; account?: string }): string {
  return account ? `${channel}@${account}` : channel;
}

/** `channel:chatId` (`channel@account` for a bot other than the channel's default one), plus `:thread:ID`. */
export function sessionKeyOf(channel: ChannelName, chatId: string, threadId?: string, account?: string): string {
  const route = routeOf({ channel, account });
  return threadId ? `${route}:${chatId}:thread:${threadId}` : `${route}:${chatId}`;
}

/** A message as one bot of its channel received it: `account` (absent for the default one) in its fields and key. */
export function onAccount<M extends InboundMessage>(msg: M, account: string | undefined): M {
  if (!account) return msg;
  return { ...msg, account, sessionKey: routeOf({ ...msg, account }) + msg.sessionKey.slice(msg.channel.length) };
}

/** A conversation of `agent`. Everything pincer stores for a conversation is found by its session key, so a key naming
 * its agent keeps each agent's rows apart by construction: no query reaches another agent's without building its key.
 * The main agent's keys name none, so an existing home's rows stay where they are. */
export function agentSessionKey(agent: string, key: string): string {
  return agent === MAIN_AGENT ? key : `${agent}/${key}`;
}

export const agentChatKey = (agent: string, c: Pick<OutboundMessage, "channel" | "chatId" | "threadId" | "account">) =>
  agentSessionKey(agent, sessionKeyOf(c.channel, c.chatId, c.threadId, c.account));

const AGENT_PREFIX = new RegExp(`^(${NAME})/`);

export function agentOf(key: string): string {
  return AGENT_PREFIX.exec(key)?.[1] ?? MAIN_AGENT;
}

const SESSION_KEY = new RegExp(
  `^(?:(${NAME})/)?(telegram|discord|console|web|system)(?:@(${NAME}))?:(.+?)(?::thread:(.+))?$`,
);

/** The inverse of agentSessionKey over sessionKeyOf. */
export function parseSessionKey(key: string) {
  const m = SESSION_KEY.exec(key);
  if (!m) return undefined;
  const [, agent = MAIN_AGENT, channel, account, chatId, threadId] = m;
  return { agent, channel: channel as ChannelName, chatId, threadId, account };
}

/** One conversation's received files under media/: only its tools see them (the sandbox mounts no other folder). */
export function conversationMediaDir(mediaDir: string, sessionKey: string): string {
  return join(mediaDir, sessionKey.replace(/[^\w-]/g, "_"));
}

/** Where a message's answers go: its session's chat, or the one a run in a session of its own (heartbeat) names. */
export function replyTarget(
  msg: InboundMessage,
): Pick<OutboundMessage, "channel" | "chatId" | "threadId" | "account" | "agent"> {
  const to = deliverToOf(msg);
  const parsed = (to && parseSessionKey(to)) || parseSessionKey(msg.sessionKey);
  if (!parsed) return { channel: msg.channel, chatId: msg.chatId };
  const { agent, ...chat } = parsed;
  return { ...chat, ...(agent !== MAIN_AGENT && { agent }) };
}

/** The chat a run in a session of its own answers in (the heartbeat, a helper it started). */
export function deliverToOf(msg: InboundMessage): string | undefined {
  return msg.channel === "system" && msg.run.kind !== "cron" ? msg.run.deliverTo : undefined;
}

/** The answer that sends nothing (the heartbeat's "nothing to tell"). */
export function silentReplyOf(msg: InboundMessage): string | undefined {
  return msg.channel === "system" && msg.run.kind === "heartbeat" ? msg.run.silentReply : undefined;
}

/** The person a run speaks for: the sender, or for a scheduled run or a helper's result the job's / parent's owner. */
export function personOf(msg: InboundMessage): string | undefined {
  if (msg.channel !== "system") return msg.senderId;
  return msg.run.kind === "heartbeat" ? undefined : msg.run.userId;
}

export const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** What a reply answers, as the model is shown it: on one line, cut at 300 characters; none for an empty text. */
export function quotation(text: string, from: string, trust: Quote["trust"]): { quote?: Quote } {
  const flat = text.replace(/\s+/g, " ").trim();
  if (!flat) return {};
  return { quote: { text: clip(flat, 300), from, trust } };
}
