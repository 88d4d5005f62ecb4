import type { Logger } from "pino";
import type { AccessGate } from "../access/gate.js";
import type { Switchboard } from "../bus/switchboard.js";
import type { InboundMessage } from "../bus/types.js";
import type { Config } from "../config/config.js";
import type { TokenCounter } from "../llm/tokens.js";
import type { Consolidator } from "../memory/consolidator.js";
import type { Store } from "../store/store.js";
import type { ReadCache } from "../tools/files/read-cache.js";
import type { ToolRegistry } from "../tools/registry.js";
import type { MeteredRun, UsageMeter } from "../usage/meter.js";
import type { VoiceReplies } from "../voice/voice-replies.js";
import type { PreparedAttachments } from "./attachments.js";
import type { LoopDeps } from "./loop.js";
import type { ChatModels } from "./model-choice.js";
import type { Skill } from "./skills.js";
import type { HelperManager } from "./spawned-helpers.js";
import type { TurnObserver } from "./turn-stats.js";

export interface WorkerDeps {
  /** Each agent but main by name: what its turns and commands take instead (its config, tools, models, memory). */
  agents?: ReadonlyMap<string, Partial<WorkerDeps>>;
  bus: Switchboard;
  journal: Store["journal"];
  conversations: Store["conversations"];
  turns: Store["turns"];
  audit: Store["audit"];
  /** The turn's journal: a turn cut short by a crash resumes instead of repeating finished tool calls. */
  steps: Store["steps"];
  chatModels: ChatModels;
  registry: ToolRegistry;
  log: Logger;
  memory: Store["memory"];
  tokens: TokenCounter;
  consolidator?: Consolidator;
  config: Config;
  skills: () => Skill[];
  /** Serves unchanged prompt files from memory (shared with `skills`). */
  files: ReadCache;
  helpers: Pick<HelperManager, "list" | "cancel">;
  /** `run`: whose turn it is (a transcription is counted against its budgets). */
  attachments: (paths: string[], signal: AbortSignal, run: MeteredRun) => Promise<PreparedAttachments>;
  now?: () => Date;
  /** Awaited (bounded) before a turn's prompt: the MCP servers' first connections and the endpoint's context. */
  ready: () => Promise<void>;
  /** More lines for `/status` (the MCP servers' state). */
  statusLines: () => string[];
  /** A message the model is unavailable for waits and runs later instead of failing (off for one-shot commands). */
  waitForModel: boolean;
  /** The access gate: a message queued before a revoke is not run. */
  senderHasAccess: (msg: InboundMessage) => Promise<boolean>;
  /** The gate's people: who is behind a run it did not see, and `/link CODE` (absent in tests that need neither). */
  access?: Pick<AccessGate, "whoIs" | "link">;
  people?: Store["people"];
  /** Called once a message's turn is over and its reply is in the outbox. */
  onTurnFinished?: (msg: InboundMessage) => void;
  /** Absent when config `approvals` asks for nothing. */
  approve?: LoopDeps["approve"];
  observer?: TurnObserver;
  usage: Pick<UsageMeter, "wrap" | "report" | "checkBefore">;
  /** Spoken replies (`voice.replies`, `/voice`): adds a reply's voice note when its chat wants one. */
  voice?: Pick<VoiceReplies, "dress" | "answer">;
  /** `/jobs`: posts the sender's jobs with their buttons, returns the closing line. */
  jobsChat?: { answer(msg: InboundMessage): Promise<string> };
}
