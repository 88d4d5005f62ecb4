import type { FileConfig } from "../config/file-schema.js";

export type Binding = FileConfig["bindings"][number];

/** Where a message was written, as bindings match it: `account` undefined is the channel's default account. */
export interface MessagePlace {
  channel: string;
  account?: string;
  chatId: string;
  threadId?: string;
  guildId?: string;
}

/** How much each field narrows a binding: a topic or thread beats its chat, a chat its server (guild), a server its
 * account, an account the whole channel; the sum orders bindings naming several. */
const WEIGHT = { thread: 8, chat: 4, guild: 2, account: 1 } as const;

/** The agent that answers a message: the most specific binding that matches it, the first in the file among equals;
 * none matching, the account's own agent. */
export function bindingFor(place: MessagePlace, bindings: readonly Binding[], accountAgent: string): string {
  const actual = {
    account: place.account ?? "default",
    chat: place.chatId,
    thread: place.threadId,
    guild: place.guildId,
  };
  let best: { agent: string; score: number } | undefined;
  for (const binding of bindings) {
    const named = (["account", "chat", "thread", "guild"] as const).filter((field) => binding[field] !== undefined);
    if (binding.channel !== place.channel || named.some((field) => binding[field] !== actual[field])) continue;
    const score = named.reduce((sum, field) => sum + WEIGHT[field], 0);
    if (best === undefined || score > best.score) best = { agent: binding.agent, score };
  }
  return best?.agent ?? accountAgent;
}
