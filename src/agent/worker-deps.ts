import type { Logger } from "pino";
import type { MemorySharing } from "../access/policy.js";
import type { MessageBus } from "../bus/bus.js";
import type { InboundMessage } from "../bus/types.js";
import type { Model } from "../llm/model.js";
import type { TokenCounter } from "../llm/tokens.js";
import type { Consolidator } from "../memory/consolidator.js";
import type {
  AuditStore,
  ConversationStore,
  JournalStore,
  MemoryStore,
  TurnStepStore,
  TurnStore,
} from "../store/store.js";
import type { ReadCache } from "../tools/files/read-cache.js";
import type { ToolRegistry } from "../tools/registry.js";
import type { UsageMeter } from "../usage/meter.js";
import type { PreparedAttachments } from "./attachments.js";
import type { LoopDeps } from "./loop.js";
import type { ChatModels } from "./model-choice.js";
import type { Skill } from "./skills.js";
import type { TurnObserver } from "./turn-stats.js";
import type { WaitLimits } from "./waiting.js";

/** What the agent worker is given: its stores, the model, the tools and its settings. */
export interface WorkerDeps {
  bus: MessageBus;
  journal: JournalStore;
  conversations: ConversationStore;
  turns: TurnStore;
  audit: AuditStore;
  /** The turn's journal: a turn cut short by a crash resumes instead of repeating finished tool calls. */
  steps?: TurnStepStore;
  /** The default model; with `chatModels`, a chat's choice (`/model`) instead. */
  model: Model;
  chatModels?: ChatModels;
  registry: ToolRegistry;
  log: Logger;
  memory: MemoryStore;
  tokens: TokenCounter;
  /** Summarises old turns after a turn, in the background; absent when switched off. */
  consolidator?: Consolidator;
  settings: {
    model: string;
    workspace: string;
    timezone: string;
    maxIterations: number;
    maxConcurrentTurns: number;
    /** When a message that waits for the model is given up (config agent.waitForModel). */
    waitLimits: WaitLimits;
    /** agent.contextTokens: the most a turn's context may take, whatever the endpoint takes. */
    contextTokens: number;
    /** Show a progress note when a tool round runs longer than this; off when absent. */
    progressAfterMs?: number;
    /** Where a reply is shown as the model writes it (config agent.streamReplies); nowhere when absent. */
    streamReplies?: "private" | "all" | "off";
    /** Config cron.tools: what a scheduled run may use (absent: every tool but cron and spawn). */
    cronTools?: readonly string[];
    memoryPromptChars: number;
    /** Who sees the owner's MEMORY.md besides the owner's own chats. */
    sharing: MemorySharing;
  };
  skills: () => Skill[];
  /** Serves unchanged prompt files from memory (shared with `skills`). */
  files?: ReadCache;
  /** Background helpers, for /status and /stop. */
  helpers?: {
    list(sessionKey?: string): Array<{ id: string; label?: string; startedAt: number }>;
    cancel(sessionKey: string): number;
  };
  /** Reads a message's attachments for the model (images, voice notes, documents); paths only when absent. */
  attachments?: (paths: string[], signal: AbortSignal) => Promise<PreparedAttachments>;
  now?: () => Date;
  /** The context window now: agent.contextTokens, or less where the endpoint is known to take less. */
  window?: () => number;
  /** A turn that does not fit `window()` asks this whether the endpoint takes more now. */
  recheckWindow?: () => Promise<boolean>;
  /**
   * What a turn waits for before it builds its prompt (bounded; settled at once after the first
   * turns): the MCP servers' first connection attempts and what the endpoint says of its context.
   */
  ready?: () => Promise<void>;
  /** More lines for `/status` (the MCP servers' state). */
  statusLines?: () => string[];
  /**
   * While the model is unavailable (every endpoint down or its circuit open), a message waits in
   * its queue and runs again later instead of failing; each chat is told once. Off for one-shot
   * commands that must end.
   */
  waitForModel?: boolean;
  /** Whether the sender may still talk to pincer (the access gate): a message queued before a revoke is not run. */
  senderHasAccess?: (msg: InboundMessage) => Promise<boolean>;
  /** Called once a message's turn is over and its reply is in the outbox. */
  onTurnFinished?: (msg: InboundMessage) => void;
  /** Asks a person before a call where config `approvals` says so (src/approvals); absent when off. */
  approve?: LoopDeps["approve"];
  /** Told about model calls, tool calls and finished turns (metrics). */
  observer?: TurnObserver;
  /** Counts every model call and checks the budgets before it (config `usage`). */
  usage?: Pick<UsageMeter, "wrap" | "report">;
}
