export { createTelegramChannel, DEFAULT_TIMING, type TelegramChannelDeps, type TelegramTiming } from "./channel.js";
export { markdownToTelegramHtml } from "./format.js";
export { htmlToPlainText, splitTelegramHtml, TELEGRAM_TEXT_LIMIT } from "./split.js";
