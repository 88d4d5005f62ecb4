import type { Context } from "grammy";
import type { CallbackQuery, InlineKeyboardMarkup } from "grammy/types";
import type { Logger } from "pino";
import { usableButtons } from "../../src/bus/buttons.js";
import type { Switchboard } from "../../src/bus/switchboard.js";
import type { ButtonTap, OutboundMessage } from "../../src/bus/types.js";
import { nameOf } from "./normalize.js";

/** Telegram shows at most this much of a callback answer's text. */
const ANSWER_CHARS = 200;

export function keyboardOf(msg: Pick<OutboundMessage, "buttons">): InlineKeyboardMarkup | undefined {
  const rows = usableButtons(msg.buttons);
  if (rows.length === 0) return undefined;
  return { inline_keyboard: rows.map((row) => row.map((b) => ({ text: b.label, callback_data: b.data }))) };
}

/** A callback query as a tap on the button of a message in a chat; undefined for one with no message or data. */
export function tapOf(query: CallbackQuery, receivedAt: number): ButtonTap | undefined {
  const { message, data, from } = query;
  if (!message || data === undefined) return undefined;
  // A message too old for Telegram to show (date 0) carries no keyboard: the tap has no label then.
  const shown = message.date === 0 ? undefined : message;
  const label = shown?.reply_markup?.inline_keyboard
    .flat()
    .find((b) => "callback_data" in b && b.callback_data === data)?.text;
  const threadId = shown?.is_topic_message && shown.message_thread_id ? String(shown.message_thread_id) : undefined;
  return {
    id: query.id,
    channel: "telegram",
    chatId: String(message.chat.id),
    ...(threadId ? { threadId } : {}),
    senderId: String(from.id),
    senderName: nameOf(from),
    isGroup: message.chat.type === "group" || message.chat.type === "supergroup",
    messageId: String(message.message_id),
    data,
    ...(label !== undefined ? { label } : {}),
    receivedAt,
  };
}

/** Hands a press to the bus (not one in a group outside telegram.allowedGroups); always answers it, the text a toast. */
export function createTapHandler(deps: { bus: Switchboard; allowedGroups: string[]; log: Logger; account?: string }) {
  const { bus, allowedGroups, log, account } = deps;
  return async (ctx: Context & { callbackQuery: CallbackQuery }): Promise<void> => {
    const made = tapOf(ctx.callbackQuery, Date.now());
    const tap = made && account ? { ...made, account } : made;
    const outside = tap?.isGroup && allowedGroups.length > 0 && !allowedGroups.includes(tap.chatId);
    let text: string | undefined;
    if (tap && !outside) text = (await bus.publishTap(tap)).text;
    else log.debug({ from: ctx.callbackQuery.from.id }, "answered a callback query without acting on it");
    await ctx
      .answerCallbackQuery(text ? { text: [...text].slice(0, ANSWER_CHARS).join("") } : undefined)
      .catch((err: unknown) => log.debug({ err }, "could not answer a callback query"));
  };
}
