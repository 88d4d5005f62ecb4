import type { BusJournal } from "../bus/delivery.js";
import type { ChannelName, InboundMessage, OutboundMessage } from "../bus/types.js";
import type { Fence } from "./cluster.js";
import type {
  ConversationSummary,
  CronJob,
  HelperRun,
  HelperStatus,
  HistoryEntry,
  JobSlot,
  MemoryEntry,
  NewEntry,
  NewJob,
  OpenRequest,
  PairingRequest,
  PendingMessage,
  Pruned,
  RetentionAges,
  SearchHit,
  SearchScope,
  StoredMessage,
  StoreStatus,
  ToolCallEntry,
  TurnSoFar,
} from "./types.js";

export type * from "./types.js";
export { estimateTokens } from "./types.js";

/**
 * Every durable thing pincer does goes through this one asynchronous interface, in small groups.
 * An engine (SQLite embedded, PostgreSQL clustered) implements all of it; what must happen
 * together is one method here, so each engine keeps it in one transaction.
 */
export interface Store {
  readonly engine: "sqlite" | "postgres";
  journal: JournalStore;
  steps: TurnStepStore;
  turns: TurnStore;
  conversations: ConversationStore;
  memory: MemoryStore;
  jobs: JobStore;
  pairing: PairingStore;
  audit: AuditStore;
  helperRuns: HelperRunStore;
  dashboard: DashboardStore;
  retention: RetentionStore;
  status: StatusStore;
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

export interface PairingOptions {
  now?: () => number;
  /** How long a code stays valid. */
  ttlMs?: number;
  /** Open requests per channel; at the cap the oldest one makes room for a new stranger. */
  maxPending?: number;
}

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

/** One pending outbound row, as `pendingOutbound` lists it. */
export interface PendingOutbound {
  id: number;
  msg: OutboundMessage;
  partsSent: number;
}

/** The inbox and outbox: accepted messages survive a crash, delivered replies are not resent. */
export interface JournalStore extends BusJournal {
  /**
   * Counts a start of the message's turn and returns how many there have been, this one included.
   * A count above one means earlier turns were cut off by a crash: the daemon died during them.
   */
  recordTurnStart(msg: InboundMessage): Promise<number>;
  /** Takes back a start: the turn was stopped by an orderly shutdown, not by a crash. */
  forgetTurnStart(msg: InboundMessage): Promise<void>;
  /**
   * Counts a try of the message that found the model unavailable (begun at `triedAt`); returns
   * the tries so far and when the first of them began (kept across restarts).
   */
  recordModelWait(msg: InboundMessage, triedAt: number): Promise<{ tries: number; since: number }>;
  /** Marks the message done (its turn's steps go with it). */
  completeInbound(msg: InboundMessage): Promise<void>;
  /** True while the message is accepted but its turn has not finished. */
  isPending(msg: Pick<InboundMessage, "channel" | "chatId" | "id">): Promise<boolean>;
  /** Messages accepted but never finished, oldest first: the turns to run again after a restart. */
  pendingInbound(): Promise<InboundMessage[]>;
  /** Every pending row of a channel, oldest first (for status and tests). */
  pendingOutbound(channel: ChannelName): Promise<PendingOutbound[]>;
  /** Keeps the journal from growing forever: finished rows older than `maxAgeMs` go. */
  prune(maxAgeMs: number, now?: number): Promise<void>;
}

/**
 * The turn's journal, written as it happens (each row before the next step starts), so a turn cut
 * short by a crash resumes where it was. The rows go when the inbound message is completed.
 */
export interface TurnStepStore {
  assistant(msg: InboundMessage, message: StoredMessage): Promise<void>;
  started(msg: InboundMessage, callId: string): Promise<void>;
  result(msg: InboundMessage, callId: string, content: string): Promise<void>;
  load(msg: InboundMessage): Promise<TurnSoFar>;
}

export interface TurnStore {
  /**
   * Appends the turn's messages to the conversation, marks the inbound message done and records
   * the reply in the outbox, all or nothing. Returns the reply's outbox id.
   */
  finishTurn(
    msg: InboundMessage,
    messages: StoredMessage[],
    out: OutboundMessage | undefined,
  ): Promise<number | undefined>;
  /**
   * Closes messages that will not be run (a /stop or /new while they waited for the model) with
   * one notice, all or nothing; with `archive`, that session's conversation ends too. Returns the
   * notice's outbox id.
   */
  setAside(messages: InboundMessage[], out: OutboundMessage, archive?: string): Promise<number>;
}

/**
 * Conversations and their messages. A session key has one open conversation at a time;
 * `/new` archives it and the next message starts another.
 */
export interface ConversationStore {
  /** Starts a fresh conversation for the session (the old one stays in the database). */
  archive(sessionKey: string): Promise<void>;
  append(sessionKey: string, messages: StoredMessage[]): Promise<void>;
  /**
   * The newest messages of the open conversation that fit in `tokenBudget`, oldest first, starting
   * at a user message, leaving out those consolidated into memory entries. Costs depend on the
   * budget, not on the length of the conversation.
   */
  recent(sessionKey: string, tokenBudget: number): Promise<StoredMessage[]>;
  /** Messages of the session's open conversation. */
  count(sessionKey: string): Promise<number>;
}

/** Consolidation's bookkeeping and the full-text index over memory. */
export interface MemoryStore {
  /** The session's open conversation, if it has one (never creates it). */
  openConversation(sessionKey: string): Promise<number | undefined>;
  /** Archived conversations of the session that still have turns to consolidate (after /new). */
  archivedWithPending(sessionKey: string): Promise<number[]>;
  /** Tokens of the messages still in the prompt's history (not consolidated). */
  pendingTokens(conversationId: number): Promise<number>;
  /** The oldest unconsolidated messages, in order, until `maxTokens` is passed (at least `minRows`). */
  pending(conversationId: number, maxTokens: number, minRows?: number): Promise<PendingMessage[]>;
  /**
   * Stores the entry and moves the conversation's watermark past the messages it covers, all or
   * nothing. False (and nothing stored) when another run consolidated these messages first.
   */
  addEntry(entry: NewEntry): Promise<boolean>;
  /** The conversation's newest entries that fit in `tokenBudget`, oldest first. */
  recentEntries(conversationId: number, tokenBudget: number): Promise<MemoryEntry[]>;
  entryCount(sessionKey: string): Promise<number>;
  /** Re-indexes MEMORY.md's paragraphs when the file changed since the last time. */
  syncMemoryFile(hash: string, modifiedAt: number, paragraphs: string[]): Promise<void>;
  /**
   * Ranked hits for `query` in what the session may see: its own messages (every conversation it
   * had, also before /new), its memory entries, and MEMORY.md if allowed. Any script, CJK too.
   */
  search(query: string, scope: SearchScope): Promise<SearchHit[]>;
  /** Indexes messages stored since the last call for search (turns only mark them). Returns how many. */
  indexPending(): Promise<number>;
}

/** Cron jobs. Every read goes to the database, so a change by another process is seen. */
export interface JobStore {
  add(job: NewJob): Promise<CronJob>;
  get(id: string): Promise<CronJob | undefined>;
  /** One conversation's jobs, soonest first. */
  listBySession(sessionKey: string): Promise<CronJob[]>;
  listAll(): Promise<CronJob[]>;
  countBySession(sessionKey: string): Promise<number>;
  /** Removes a job; with `sessionKey`, only if it belongs to that conversation. */
  remove(id: string, sessionKey?: string): Promise<boolean>;
  pause(id: string, at: number): Promise<void>;
  /** Unpaused jobs due at `now`, the most overdue first; only those of `channels` when given. */
  due(now: number, channels?: readonly ChannelName[]): Promise<CronJob[]>;
  earliestNextRun(channels?: readonly ChannelName[]): Promise<number | undefined>;
  /** Moves a job to its next run without running it (a failed attempt waits). */
  postpone(id: string, nextRunAt: number): Promise<void>;
  /**
   * Takes one slot of a job, all or nothing: moves (or removes) the job and accepts the run into
   * the inbox, only if the job is still at `scheduledAt` (no other process took it). `taken`:
   * the job moved; `accepted`: the run entered the inbox now (false for a replay).
   */
  takeSlot(slot: JobSlot): Promise<{ taken: boolean; accepted: boolean }>;
}

/** Pairing codes for strangers and the users the owner approved. */
export interface PairingStore {
  isApproved(channel: string, userId: string): Promise<boolean>;
  /**
   * The stranger's one open code: the same code while it is valid. A new stranger always gets one;
   * at the cap the oldest open request on the channel makes room.
   */
  request(channel: string, userId: string, userName: string): Promise<OpenRequest>;
  /** Records that the stranger was sent their code now. */
  markTold(channel: string, userId: string): Promise<void>;
  /**
   * Approves the user behind a valid code and resumes the jobs an earlier revoke paused, all or
   * nothing. Undefined when the code is unknown or expired.
   */
  approve(channel: string, code: string): Promise<{ user: PairingRequest; resumedJobs: number } | undefined>;
  /** Takes back an approval (and any open code) and pauses the jobs the user created, all or nothing. */
  revoke(channel: string, userId: string, at?: number): Promise<{ revoked: boolean; pausedJobs: number }>;
  /** Drops a stranger's open request (the control page's Deny); false when there was none. */
  deny(channel: string, userId: string): Promise<boolean>;
  pending(): Promise<PairingRequest[]>;
  approved(): Promise<Array<{ channel: string; userId: string; userName: string }>>;
}

/** Every tool call (arguments and the start of the result), for `pincer status` and forensics. */
export interface AuditStore {
  record(entry: ToolCallEntry): Promise<void>;
}

/** Spawned helpers' runs, so a restart knows which were cut short. */
export interface HelperRunStore {
  start(run: Omit<HelperRun, "status" | "finishedAt" | "result">): Promise<void>;
  finish(id: string, status: Exclude<HelperStatus, "running">, result: string, at?: number): Promise<void>;
  /** Runs still marked running: after a restart, the ones the previous process never finished. */
  running(): Promise<HelperRun[]>;
  /** The newest runs, newest first. */
  recent(limit: number): Promise<HelperRun[]>;
}

/** Read-only views for the control page. Cheap, bounded queries only. */
export interface DashboardStore {
  /** Open conversations, most recently active first. */
  conversations(limit?: number): Promise<ConversationSummary[]>;
  /** The open conversation's newest messages with the audit's tool calls between them, oldest first. */
  history(sessionKey: string, limit?: number): Promise<HistoryEntry[]>;
  outboxPending(): Promise<number>;
  inboxPending(): Promise<number>;
  /** True when the database answers a trivial query (never throws). */
  ping(): Promise<boolean>;
}

export interface RetentionStore {
  /**
   * Deletes tool-audit rows, conversations archived by `/new` (with their messages) and dead
   * letters older than their ages, all or nothing. An open conversation is never touched.
   */
  prune(ages: Omit<RetentionAges, "mediaDays">, now?: number): Promise<Pruned>;
}

export interface StatusStore {
  /** What `pincer status` shows about the database. */
  summary(): Promise<StoreStatus>;
}

/** A turn's writes made under a fence: each commits only while the fence is current in the database. */
export interface FencedTurnWrites {
  steps: TurnStepStore;
  turns: TurnStore;
  recordTurnStart(msg: InboundMessage): Promise<number>;
}
