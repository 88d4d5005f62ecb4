import type { Message, MessageEntity, User } from "grammy/types";
import { type InboundMessage, type Quote, quotation, sessionKeyOf } from "../../src/bus/types.js";

type BotIdentity = { id: number; username: string };

/** A file a message carries, before it is downloaded; size and duration when Telegram tells. */
export interface AttachmentRef {
  kind: "photo" | "document" | "voice" | "audio" | "video" | "video_note" | "animation";
  fileId: string;
  fileName: string; // keeps the extension recognisable to tools and the model
  fileSize?: number;
  label: string; // what the model is told about it, besides the path
  durationSeconds?: number;
}

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

/** A user's message as the bus takes it (before its files are downloaded), and what the group gate reads; undefined for
 * what has nothing for the agent (bots, service messages, no content). */
export function normalizeMessage(message: Message, bot: BotIdentity, receivedAt = Date.now()) {
  const { from } = message;
  if (!from || from.is_bot) return undefined;
  const rawText = message.text ?? message.caption ?? "";
  const entities = message.entities ?? message.caption_entities ?? [];
  const attachments = attachmentsOf(message);
  const chatId = String(message.chat.id);
  // A forum topic is its own conversation.
  const threadId =
    message.is_topic_message && message.message_thread_id ? String(message.message_thread_id) : undefined;
  const reply = message.reply_to_message;
  // Inside a forum topic every message "replies" to the topic's creation message; that is not a reply.
  const realReply =
    reply && !(threadId && (reply.message_id === message.message_thread_id || reply.forum_topic_created));
  const repliesToBot = Boolean(realReply && reply.from?.id === bot.id);
  // A bare "@botname" still says something: it is kept rather than turned into an empty message.
  const said = stripBotName(rawText, bot.username) || rawText.trim();
  const text = [said, ...describeContent(message)].filter(Boolean).join("\n");
  if (!text && attachments.length === 0) return undefined;
  const inbound: InboundMessage = {
    id: String(message.message_id),
    channel: "telegram",
    chatId,
    senderId: String(from.id),
    senderName: nameOf(from),
    text,
    media: [],
    replyToId: realReply ? String(reply.message_id) : undefined,
    isGroup: message.chat.type === "group" || message.chat.type === "supergroup",
    // @mentioned, text-mentioned, a command addressed to the bot by name, or a reply to it.
    mentionsBot: mentions(rawText, entities, bot) || repliesToBot,
    receivedAt,
    sessionKey: sessionKeyOf("telegram", chatId, threadId),
    ...(realReply ? quoteOf(message, reply, bot) : {}),
    ...(message.forward_origin ? { forwardedFrom: originName(message.forward_origin) } : {}),
  };
  return { inbound, repliesToBot, isCommand: isCommandFor(rawText, entities, bot.username), attachments };
}

/** The replied-to text (the part the user quoted, if they did), who wrote it, and whether it is trusted. */
function quoteOf(message: Message, reply: Message, bot: BotIdentity): { quote?: Quote } {
  const author = reply.from;
  const trust = author?.id === bot.id ? "bot" : author?.id === message.from?.id ? "self" : "other";
  const text = message.quote?.text ?? reply.text ?? reply.caption ?? "";
  return quotation(text, author ? nameOf(author) : "someone", trust);
}

const fullName = (p: { first_name: string; last_name?: string }) =>
  [p.first_name, p.last_name].filter(Boolean).join(" ");

export function nameOf(user: User): string {
  return fullName(user) || (user.username ? `@${user.username}` : String(user.id));
}

function originName(origin: NonNullable<Message["forward_origin"]>): string {
  if (origin.type === "user") {
    const u = origin.sender_user;
    return fullName(u) + (u.username ? ` (@${u.username})` : "");
  }
  if (origin.type === "hidden_user") return origin.sender_user_name;
  if (origin.type === "chat") return origin.sender_chat.title ?? "a chat";
  return `${origin.chat.title ?? "a channel"} (channel)`;
}

function entityText(text: string, entity: MessageEntity): string {
  return text.slice(entity.offset, entity.offset + entity.length);
}

function mentions(text: string, entities: MessageEntity[], bot: BotIdentity): boolean {
  const handle = `@${bot.username}`.toLowerCase();
  return entities.some((e) => {
    if (e.type === "mention") return entityText(text, e).toLowerCase() === handle;
    if (e.type === "text_mention") return e.user.id === bot.id;
    if (e.type === "bot_command") return entityText(text, e).toLowerCase().endsWith(handle);
    return false;
  });
}

/** `/new` or `/new@thisbot` at the start; `/new@otherbot` is someone else's. */
function isCommandFor(text: string, entities: MessageEntity[], username: string): boolean {
  const command = entities.find((e) => e.type === "bot_command" && e.offset === 0);
  if (!command) return false;
  const [, target] = entityText(text, command).split("@");
  return target === undefined || target.toLowerCase() === username.toLowerCase();
}

/** Removes `@botname` (as a word or after a leading `/command`, any case, with the comma or colon and the one space
 * after it) so the agent and the command parser see the plain request. Every other space is the user's. */
export function stripBotName(text: string, username: string): string {
  const escaped = username.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const stripped = text
    .replace(new RegExp(`^(/\\w+)@${escaped}\\b`, "i"), "$1")
    .replace(new RegExp(`(^|[ \\t])@${escaped}\\b[,:]?(?:[ \\t]|$)`, "gim"), "$1")
    .replace(/^(?:[ \t]*\n)+/, "")
    .trimEnd();
  return stripped.trim() === "" ? "" : stripped;
}

function attachmentsOf(message: Message): AttachmentRef[] {
  const id = message.message_id;
  const { voice, audio, video, video_note: note, animation } = message;
  const found: AttachmentRef[] = [];
  const add = (
    kind: AttachmentRef["kind"],
    file: { file_id: string; file_size?: number },
    fileName: string,
    label: string,
    durationSeconds?: number,
  ) => found.push({ kind, fileId: file.file_id, fileName, fileSize: file.file_size, label, durationSeconds });
  // Sizes come smallest first; the largest is the one worth reading.
  const photo = message.photo?.at(-1);
  if (photo) add("photo", photo, `photo-${id}.jpg`, "photo");
  // An animation comes with a document copy of itself: it is taken once, as the animation.
  const doc = animation ? undefined : message.document;
  if (doc) add("document", doc, doc.file_name || `document-${id}`, `document ${doc.file_name || `document-${id}`}`);
  if (voice) add("voice", voice, `voice-${id}.ogg`, `voice message, ${voice.duration} s`, voice.duration);
  const audioName = audio?.file_name || `audio-${id}.mp3`;
  if (audio) add("audio", audio, audioName, `audio ${audio.title ?? audioName}, ${audio.duration} s`, audio.duration);
  if (video) add("video", video, video.file_name || `video-${id}.mp4`, `video, ${video.duration} s`);
  if (note) add("video_note", note, `video-note-${id}.mp4`, `video note, ${note.duration} s`);
  if (animation) add("animation", animation, animation.file_name || `animation-${id}.mp4`, "animation");
  return found;
}

/** Content that is not a file to download and not text: told to the agent in words, never a crash. */
function describeContent({ sticker, location, venue, contact, poll, dice }: Message): string[] {
  return [
    sticker && `[sticker ${sticker.emoji ?? ""}]`.replace(" ]", "]"),
    location && !venue && `[location: ${location.latitude}, ${location.longitude}]`,
    venue && `[venue: ${venue.title}, ${venue.address}]`,
    contact && `[contact: ${fullName(contact)}, ${contact.phone_number}]`,
    poll && `[poll: ${poll.question} — ${poll.options.map((o) => o.text).join(" / ")}]`,
    dice && `[dice ${dice.emoji} rolled ${dice.value}]`,
  ].filter((note): note is string => Boolean(note));
}
