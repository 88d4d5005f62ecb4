import type { InboundMessage } from "../bus/types.js";
import type { SqlApprovals } from "./approvals.js";
import type { SqlChatModels } from "./chat-models.js";
import type { Fence } from "./cluster.js";
import type { SqlConversations } from "./conversations.js";
import type { SqlJobs } from "./jobs.js";
import type { SqlJournal, SqlTurnSteps, SqlTurns } from "./journal.js";
import type { SqlMemory } from "./memory.js";
import type { SqlPairing } from "./pairing.js";
import type { PairingOptions, StoredMessage } from "./types.js";
import type { SqlUsage } from "./usage.js";
import type { SqlAudit, SqlDashboard, SqlHelperRuns, SqlRetention, SqlStatus } from "./views.js";

export type { AllowedEntry, Approval, ApprovalChoice, ApprovalState, NewApproval } from "./approvals.js";
export type * from "./types.js";
export { estimateTokens } from "./types.js";
export type { UsageEntry, UsageGroup, UsageSums } from "./usage.js";

/** What callers see of a group: its methods (one implementation serves both engines). */
type Api<T> = { [K in keyof T]: T[K] };

/** The inbox and outbox: accepted messages survive a crash, delivered replies are not resent. */
export type JournalStore = Api<SqlJournal>;
export type TurnStepStore = Api<SqlTurnSteps>;
export type TurnStore = Api<SqlTurns>;
export type ConversationStore = Api<SqlConversations>;
export type ChatModelStore = Api<SqlChatModels>;
export type MemoryStore = Api<SqlMemory>;
/** Cron jobs. Every read goes to the database, so a change by another process is seen. */
export type JobStore = Api<SqlJobs>;
/** Pairing codes for strangers and the users the owner approved. */
export type PairingStore = Api<SqlPairing>;
/** Every tool call (arguments and the start of the result), for `pincer status` and forensics. */
export type AuditStore = Api<SqlAudit>;
export type HelperRunStore = Api<SqlHelperRuns>;
/** Read-only views for the control page. Cheap, bounded queries only. */
export type DashboardStore = Api<SqlDashboard>;
export type RetentionStore = Api<SqlRetention>;
export type StatusStore = Api<SqlStatus>;
/** Tool calls waiting for a tap, and each conversation's "always allowed" list. */
export type ApprovalStore = Api<SqlApprovals>;
/** Every model call's tokens and cost (the `model_usage` table). */
export type UsageStore = Api<SqlUsage>;

/**
 * Every durable thing pincer does goes through this one asynchronous interface, in small groups.
 * An engine (SQLite embedded, PostgreSQL clustered) runs the same groups on its own SQL (see
 * sql.ts); what must happen together is one method, so it is one transaction.
 */
export interface Store {
  readonly engine: "sqlite" | "postgres";
  journal: JournalStore;
  steps: TurnStepStore;
  turns: TurnStore;
  conversations: ConversationStore;
  chatModels: ChatModelStore;
  memory: MemoryStore;
  jobs: JobStore;
  pairing: PairingStore;
  audit: AuditStore;
  helperRuns: HelperRunStore;
  dashboard: DashboardStore;
  retention: RetentionStore;
  status: StatusStore;
  approvals: ApprovalStore;
  usage: UsageStore;
  /**
   * Tells of rows written by any process (PostgreSQL's LISTEN/NOTIFY): a reply recorded for a
   * channel, a message accepted for a conversation. Absent where one process is all there is.
   * Resolves with the function that stops listening.
   */
  watch?(listener: (change: StoreChange) => void): Promise<() => Promise<void>>;
  /**
   * Clustered mode (PostgreSQL): a turn's writes made under its conversation's turn lease, each
   * refused (FencedOutError, nothing written) once the lease has changed hands.
   */
  fenced?(fence: Fence): FencedTurnWrites;
  /** Closes the store for good (the engine tidies up: SQLite folds its WAL back into the file). */
  close(): Promise<void>;
}

export type StoreChange = { kind: "outbox"; channel: string } | { kind: "inbox"; sessionKey: string };

/** How a store is opened (both engines take the same). */
export interface StoreOptions {
  /** Tokens a message costs in a request, stored with it (default: a rough estimate). */
  countTokens?: (message: StoredMessage) => number;
  pairing?: PairingOptions;
  /** A short command's store (CLI): close() leaves the file's upkeep to the daemon that may be running. */
  brief?: boolean;
  /** A lost connection to a database server: told, never thrown (PostgreSQL). */
  onError?: (err: Error) => void;
}

/** A turn's writes made under a fence: each commits only while the fence is current in the database. */
export interface FencedTurnWrites {
  steps: TurnStepStore;
  turns: TurnStore;
  recordTurnStart(msg: InboundMessage): Promise<number>;
}
