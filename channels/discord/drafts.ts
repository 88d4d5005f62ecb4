import type { REST } from "discord.js";
import { type DraftRenderer, DraftStream, draftIntervalMs } from "../../src/bus/draft-stream.js";
import { DiscordAPIError, RateLimitError, Routes } from "./library.js";
import { NO_PINGS, replyingTo } from "./outbound.js";
import { openFenceAtEnd, splitMessage } from "./split.js";

/** Replies shown as they are written, a message edited in place (a new one past 2,000 characters), an open code block
 * closed so the rest is not shown as code. Drafts ping nobody; discord.js waits out short rate limits itself. */
export function discordDrafts(rest: REST, onError: (err: unknown) => void): DraftRenderer {
  return (target, onIds) => {
    const channelId = target.threadId ?? target.chatId;
    return new DraftStream(
      {
        parts: (text) => {
          const fence = openFenceAtEnd(text);
          return splitMessage(fence ? `${text}\n${fence.marker}` : text);
        },
        send: async (content, first) => {
          const reply = first && target.replyToId ? replyingTo(target.replyToId) : {};
          const body = { content, allowed_mentions: NO_PINGS, ...reply };
          return ((await rest.post(Routes.channelMessages(channelId), { body })) as { id: string }).id;
        },
        edit: async (id, content) =>
          void (await rest.patch(Routes.channelMessage(channelId, id), {
            body: { content, allowed_mentions: NO_PINGS },
          })),
        remove: async (id) => void (await rest.delete(Routes.channelMessage(channelId, id))),
        retryAfterMs: (err) => (err instanceof RateLimitError ? err.retryAfter : undefined),
        isRefusal: (err) =>
          err instanceof DiscordAPIError && err.status >= 400 && err.status < 500 && err.status !== 429,
      },
      { intervalMs: draftIntervalMs(target.isPrivate), messageIds: target.messageIds, onIds, onError },
    );
  };
}
