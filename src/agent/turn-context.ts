import type { Logger } from "pino";
import { spaceOf } from "../access/policy.js";
import { roleSettings } from "../access/roles.js";
import { type InboundMessage, parseSessionKey, personOf } from "../bus/types.js";
import type { Config } from "../config/config.js";
import type { ChatMessage } from "../llm/model.js";
import type { TokenCounter } from "../llm/tokens.js";
import type { PromptHead } from "../store/conversations.js";
import type { MemoryEntry, Store, StoredMessage } from "../store/store.js";
import { formatDay } from "../time-zone.js";
import { ReadCache } from "../tools/files/read-cache.js";
import type { RunKind } from "../usage/meter.js";
import { buildSystemPrompt, promptFile, toChatMessage } from "./context.js";
import { requestBudget } from "./context-budget.js";
import type { LoopInput } from "./loop.js";
import { LOW_WATER, memoryToShow, summariesBlock, trimPoint, withSummaries } from "./prompt-head.js";
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
  /** Kept across turns (one per runner): the history mapped as sent, with its counts. */
  forms: ChatForms;
}

/** History rows as sent to the model, made once per row: the store's cache keeps a conversation's rows across turns,
 * so a turn maps only what was added since. `tokens` holds their stored raw counts, and the loop adds the rest. */
export class ChatForms {
  private readonly sent = new WeakMap<StoredMessage, ChatMessage>();
  readonly tokens = new WeakMap<ChatMessage, number>();

  of(row: StoredMessage): ChatMessage {
    let message = this.sent.get(row);
    if (message) return message;
    message = toChatMessage(row);
    this.sent.set(row, message);
    if (row.tokens !== undefined) this.tokens.set(message, row.tokens);
    return message;
  }
}

/** The conversation, kind of run and person (the store's people) a turn's model calls are counted under. */
export function runOf(msg: InboundMessage, roles?: Pick<Config, "roles" | "people">) {
  const own = msg.channel === "system" ? msg.run : undefined;
  const kind: RunKind = own === undefined ? "conversation" : own.kind === "cron" ? "reminder" : own.kind;
  const who = personOf(msg);
  // The gate's person (their linked accounts' calls are theirs); a run it did not see speaks for `channel:userId`.
  const person = msg.person?.id ?? (who && `${parseSessionKey(msg.sessionKey)?.channel ?? msg.channel}:${who}`);
  return {
    sessionKey: msg.sessionKey,
    kind,
    ...(person ? { person } : {}),
    ...(roles && msg.person ? { budget: roleSettings(roles, msg.person.role).usage } : {}),
    // A scheduled run's id is its message's: its calls are summed for the job's history and caps.
    ...(own?.kind === "cron" ? { runId: msg.id, ...(own.reminder ? { about: own.reminder } : {}) } : {}),
  };
}

/** Share of the window the summaries at the head of the history may take (counted raw: the same entries every turn). */
const ENTRIES_SHARE = 0.1;

/** The prompt for one turn: the system prompt, the history after the trim point (summaries of trimmed turns at its
 * head), the user's message. History that overflows its room is trimmed in one step to LOW_WATER of it, the head
 * (summaries, MEMORY.md) updated there: between trim points every request starts with the one before. Costs depend on
 * the budget, not the conversation's length; `tokenCache` has the history's counts from the store. */
export async function buildTurnContext(
  deps: TurnContextDeps,
  inbound: InboundMessage,
  userMessage: ChatMessage,
): Promise<Required<Pick<LoopInput, "system" | "history" | "user" | "tokenCache">>> {
  const { config, contextTokens, tokens, conversations, forms } = deps;
  const files = deps.files ?? new ReadCache();
  const skills = deps.skills();
  const space = spaceOf(inbound, config.workspace);
  const memoryNow = deps.ownerMemory ? promptFile(files, space, "MEMORY.md", deps.log) : "";
  const compose = async (head: PromptHead | undefined, memory: string) => {
    const system = buildSystemPrompt({
      workspace: config.workspace,
      ...(space !== config.workspace && { space }),
      skills,
      timezone: config.timezone,
      inbound,
      log: deps.log,
      cache: files,
      memory: { include: deps.ownerMemory, maxChars: config.memory.promptChars, text: memory },
    });
    const entries = head?.summariesThrough
      ? await deps.memory.recentEntries(head.conversationId, contextTokens * ENTRIES_SHARE, head.summariesThrough)
      : [];
    const block = summariesBlock(entries.map((e) => `- ${entryDates(e, config.timezone)}: ${e.text}`));
    const fixed = tokens.request(
      [{ role: "system", content: system }, withSummaries(userMessage, block)],
      deps.toolSchemas(),
    );
    return { system, block, room: Math.max(0, requestBudget(contextTokens) - fixed) };
  };
  let head = await conversations.head(inbound.sessionKey);
  if (head === undefined) {
    const { system } = await compose(undefined, memoryNow);
    return { system, history: [], user: userMessage, tokenCache: forms.tokens };
  }
  const shown = deps.ownerMemory ? memoryToShow(head.memory, memoryNow) : { text: "", store: false };
  let prompt = await compose(head, shown.text);
  let { rows, complete } = await conversations.sinceTrim(
    inbound.sessionKey,
    head,
    Math.floor(prompt.room / tokens.factor),
  );
  if (!complete && rows.length > 0 && prompt.room > 0) {
    // The trim never waits for consolidation: the summaries ready now join the head, later ones at the next trim.
    const trimmedThrough = trimPoint(rows, Math.floor((prompt.room * LOW_WATER) / tokens.factor));
    const summariesThrough = await deps.memory.entriesThrough(head.conversationId, trimmedThrough);
    head = { ...head, trimmedThrough, summariesThrough, memory: deps.ownerMemory ? memoryNow : head.memory };
    await conversations.trim(head.conversationId, head);
    prompt = await compose(head, memoryNow);
    rows = rows.filter((row) => row.id > trimmedThrough);
  } else if (shown.store) await conversations.showMemory(head.conversationId, shown.text);
  const firstUser = rows.findIndex((row) => row.message.role === "user");
  const history = (firstUser < 0 ? [] : rows.slice(firstUser)).map((row) => forms.of(row.message));
  // The summaries open the history: the first user message of the request carries them, the same every turn.
  if (history.length > 0) history[0] = withSummaries(history[0], prompt.block);
  const user = history.length > 0 ? userMessage : withSummaries(userMessage, prompt.block);
  return { system: prompt.system, history, user, tokenCache: forms.tokens };
}

function entryDates(entry: MemoryEntry, timezone: string): string {
  const from = formatDay(entry.periodStart, timezone);
  const to = formatDay(entry.periodEnd, timezone);
  return from === to ? from : `${from} – ${to}`;
}
