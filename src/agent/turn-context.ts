import type { Logger } from "pino";
import { type InboundMessage, parseSessionKey, personOf } from "../bus/types.js";
import type { Config } from "../config/config.js";
import type { ChatMessage } from "../llm/model.js";
import type { TokenCounter } from "../llm/tokens.js";
import type { MemoryEntry, Store } from "../store/store.js";
import type { ReadCache } from "../tools/files/read-cache.js";
import { requestBudget } from "./budget.js";
import { buildSystemPrompt, formatDay, toChatMessage } from "./context.js";
import type { LoopInput } from "./loop.js";
import type { Skill } from "./skills.js";

export interface TurnContextDeps {
  conversations: Store["conversations"];
  memory: Store["memory"];
  tokens: TokenCounter;
  skills: () => Skill[];
  toolSchemas: () => readonly object[];
  files?: ReadCache;
  log?: Pick<Logger, "warn">;
  config: Pick<Config, "workspace" | "timezone" | "memory">;
  /** The context window of this turn (agent.contextTokens, or less where the endpoint takes less). */
  contextTokens: number;
  /** Whether the owner's MEMORY.md is in the prompt (src/access decides). */
  ownerMemory: boolean;
}

/** What kind of run a message starts: a person's message, or one pincer addressed to itself. */
export type RunKind = "conversation" | "reminder" | "heartbeat" | "helper";

/** The conversation, kind of run and person (`channel:userId`) a turn's model calls are counted under. */
export function runOf(msg: InboundMessage) {
  const own = msg.channel === "system" ? msg.run : undefined;
  const kind: RunKind = own === undefined ? "conversation" : own.kind === "cron" ? "reminder" : own.kind;
  const about = own?.kind === "cron" ? own.reminder : undefined;
  const who = personOf(msg);
  const person = who === undefined ? undefined : `${parseSessionKey(msg.sessionKey)?.channel ?? msg.channel}:${who}`;
  return { sessionKey: msg.sessionKey, kind, ...(about ? { about } : {}), ...(person ? { person } : {}) };
}

/** Share of the budget the consolidated entries of the conversation may take in the prompt. */
const ENTRIES_SHARE = 0.1;

/**
 * The prompt for one turn: instructions (workspace files, MEMORY.md where allowed, summaries of consolidated turns,
 * skills, runtime), the newest history that fits what is left of the budget, the user's message. Costs depend on
 * the budget, not the conversation's length; `tokenCache` has the history's counts from the store.
 */
export async function buildTurnContext(
  deps: TurnContextDeps,
  inbound: InboundMessage,
  userMessage: ChatMessage,
): Promise<Required<Pick<LoopInput, "system" | "history" | "user" | "tokenCache">>> {
  const { config, contextTokens, tokens } = deps;
  const conversation = await deps.memory.openConversation(inbound.sessionKey);
  const entries =
    conversation === undefined
      ? []
      : await deps.memory.recentEntries(conversation, Math.floor((contextTokens * ENTRIES_SHARE) / tokens.factor));
  const system = buildSystemPrompt({
    workspace: config.workspace,
    skills: deps.skills(),
    timezone: config.timezone,
    inbound,
    log: deps.log,
    cache: deps.files,
    memory: { include: deps.ownerMemory, maxChars: config.memory.promptChars },
    earlier: entries.map((e) => `- ${entryDates(e, config.timezone)}: ${e.text}`),
  });
  const budget = requestBudget(contextTokens);
  const fixed = tokens.request([{ role: "system", content: system }, userMessage], deps.toolSchemas());
  const historyBudget = Math.max(0, budget - fixed);
  const tokenCache = new WeakMap<ChatMessage, number>();
  const stored = await deps.conversations.recent(inbound.sessionKey, Math.floor(historyBudget / tokens.factor));
  const history = stored.map((m) => {
    const message = toChatMessage(m);
    if (m.tokens !== undefined) tokenCache.set(message, m.tokens);
    return message;
  });
  return { system, history, user: userMessage, tokenCache };
}

function entryDates(entry: MemoryEntry, timezone: string): string {
  const from = formatDay(entry.periodStart, timezone);
  const to = formatDay(entry.periodEnd, timezone);
  return from === to ? from : `${from} – ${to}`;
}
