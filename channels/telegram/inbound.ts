import type { Context, Composer as GrammyComposer } from "grammy";
import type { Message } from "grammy/types";
import type { Logger } from "pino";
import type { Switchboard } from "../../src/bus/switchboard.js";
import { conversationMediaDir, onAccount } from "../../src/bus/types.js";
import { inboundRetries, untilStored } from "../../src/bus/until-stored.js";
import { createTapHandler } from "./buttons.js";
import { Composer } from "./library.js";
import { downloadAttachment, type MediaDeps } from "./media.js";
import { groupRefusal, normalizeMessage } from "./normalize.js";

/** Each message is normalised, gated (groups), screened by the access gate, its files downloaded, then published,
 * without waiting for the agent. Kinds pincer has no use for get a debug line, never an error. */
export function createInboundHandlers(deps: {
  bus: Switchboard;
  allowedGroups: string[];
  media: Omit<MediaDeps, "api">;
  log: Logger;
  /** Aborted when the channel stops: a message not stored by then is not confirmed to Telegram. */
  signal: () => AbortSignal;
  /** The bot's account (config `accounts`), absent for TELEGRAM_BOT_TOKEN's. */
  account?: string;
}): GrammyComposer<Context> {
  const { log } = deps;
  const composer = new Composer<Context>();

  composer.on("message", (ctx) => handleMessage(ctx, ctx.message));

  composer.on("callback_query", createTapHandler(deps));
  composer.on("my_chat_member", (ctx) => {
    const { chat, new_chat_member: member } = ctx.myChatMember;
    if (chat.type === "private") return;
    log.info(
      { chatId: chat.id, title: "title" in chat ? chat.title : undefined, status: member.status },
      member.status === "member" || member.status === "administrator"
        ? "added to a group; it answers there when mentioned or replied to (telegram.allowedGroups limits which groups)"
        : "membership in a group changed",
    );
  });
  // Everything else is left unread: answering an edit again would duplicate the conversation, and channel posts have
  // no sender to check against the allowlist.
  composer.use((ctx) => {
    const kinds = Object.keys(ctx.update).filter((k) => k !== "update_id");
    log.debug({ updateId: ctx.update.update_id, kinds }, "ignored an update of a kind pincer does not use");
  });

  async function handleMessage(ctx: Context, message: Message): Promise<void> {
    const normalized = normalizeMessage(message, { id: ctx.me.id, username: ctx.me.username });
    if (!normalized) return;
    const { inbound, attachments } = normalized;
    const refusal = groupRefusal({ ...inbound, ...normalized, allowedGroups: deps.allowedGroups });
    if (refusal) return log.debug({ chatId: inbound.chatId, reason: refusal }, "group message not for the bot");
    // The store may be away (the gate reads it too): both calls are retried until it answers.
    const retries = inboundRetries(log, deps.signal());
    // Before any download: a stranger's files are never fetched (the gate answers them itself).
    const addressed = await untilStored(() => deps.bus.screenInbound(onAccount(inbound, deps.account)), retries);
    if (!addressed) return;
    const notes: string[] = [];
    for (const [index, attachment] of attachments.entries()) {
      const outcome = await downloadAttachment(
        { ...deps.media, dir: conversationMediaDir(deps.media.dir, addressed.sessionKey), api: ctx.api },
        attachment,
        `telegram-${inbound.chatId}-${inbound.id}-${index}`,
      );
      if ("path" in outcome) addressed.media.push(outcome.path);
      else notes.push(outcome.note);
    }
    // The screened message itself goes on: the bus knows it by identity and does not ask the gate again.
    addressed.text = [addressed.text, ...notes].filter(Boolean).join("\n");
    if (!(await untilStored(() => deps.bus.publishInbound(addressed), retries))) {
      log.debug({ chatId: inbound.chatId, id: inbound.id }, "not accepted: a replayed update, or refused by the gate");
    }
  }

  return composer;
}
