import type { InboundMessage } from "../bus/types.js";
import type { FileConfig } from "../config/file-schema.js";

/** When a job runs. `at` is one instant; `every` repeats a period counted from `anchor` (runs stay on a grid instead of
 * drifting by however late each run was); `cron` is a 5- or 6-field expression read as wall-clock time in `tz`. */
export type Schedule =
  | { kind: "at"; at: number }
  | { kind: "every"; everySeconds: number; anchor: number }
  | { kind: "cron"; expr: string; tz: string };

/** One message of a conversation as the model sees it; `tokens` is set when read back for the prompt. */
export interface StoredMessage {
  role: "user" | "assistant" | "tool";
  content: string | null;
  toolCalls?: Array<{ id: string; name: string; arguments: string }>;
  toolCallId?: string;
  createdAt?: number;
  tokens?: number;
}

/** A turn cut short: its messages so far, and the calls running when the process died. */
export interface TurnSoFar {
  produced: StoredMessage[];
  interrupted: Set<string>;
}

/** A dated summary of consolidated turns. */
export interface MemoryEntry {
  id: number;
  periodStart: number;
  periodEnd: number;
  text: string;
  tokens: number;
}

/** A message not yet consolidated, with its id (the watermark moves by id). */
export type PendingMessage = Omit<StoredMessage, "toolCallId"> & { id: number; tokens: number; createdAt: number };

/** `throughId`: the last message the entry covers; everything up to it leaves the prompt. */
export type NewEntry = Omit<MemoryEntry, "id"> & {
  sessionKey: string;
  conversationId: number;
  throughId: number;
  firstId: number;
};

/** `memoryFile`: whether MEMORY.md (indexed by syncMemoryFile) is searched too; `memoryOf`: whose (the key it was
 * indexed under: a person's id for their space's, else the session's agent). */
export interface SearchScope {
  sessionKey: string;
  memoryFile: boolean;
  memoryOf?: string;
  limit: number;
}

export interface SearchHit {
  kind: "memory" | "entry" | "message";
  role?: StoredMessage["role"];
  at: number;
  snippet: string;
}

/** Where a job was created: its runs are addressed to this conversation and answered there. */
export type JobOrigin = Pick<InboundMessage, "channel" | "account" | "chatId" | "sessionKey" | "isGroup"> & {
  threadId?: string;
};

/** Who created a job (it runs only while they have access); `channel`: the bot's route (routeOf) they wrote to. */
export type JobOwner = { channel: string; userId: string };

export interface CronJob {
  id: string;
  name?: string;
  message: string;
  schedule: Schedule;
  /** The zone the job's times are shown in (and a cron expression is read in). */
  tz: string;
  origin: JobOrigin;
  /** Absent only for jobs from before owners were recorded whose owner could not be told; they do not run. */
  owner?: JobOwner;
  pausedAt?: number;
  /** Why: its owner lost access (`owner`, undone by an approval), someone paused it (`user`), or its runs kept failing. */
  pausedReason?: JobPauseReason;
  createdAt: number;
  nextRunAt: number;
  lastRunAt?: number;
  /** The inbound message id of the latest run, to keep a recurring job from overlapping itself. */
  lastDeliveryId?: string;
  /** Someone asked for a run now (Run now, `pincer cron run`): the scheduler's holder fires it, once. */
  runRequestedAt?: number;
  /** Runs fired so far (for `limits.maxRuns`). */
  runCount: number;
  /** Runs that failed since the last one that did not. */
  failures: number;
  /** The job's own stop rules (the config's `cron` defaults fill in the rest). */
  limits: JobLimits;
}

export type JobPauseReason = "owner" | "user" | "failures";

/** When a job stops: after `maxRuns` runs or at `endsAt`; a run stops at its token or cost cap, a day's runs at theirs. */
export const LIMIT_FIELDS = ["maxRuns", "endsAt", "runTokens", "runCost", "dayTokens", "dayCost"] as const;
export type JobLimits = Partial<Record<(typeof LIMIT_FIELDS)[number], number>>;

export type NewJob = Pick<CronJob, "name" | "message" | "schedule" | "tz" | "origin" | "createdAt" | "nextRunAt"> & {
  owner: JobOwner;
  limits?: JobLimits;
};

/** What the page, the CLI and the chat may change of a job; the next run is worked out by the caller. */
export type JobEdit = Pick<CronJob, "message" | "schedule" | "tz" | "nextRunAt"> & { limits?: JobLimits };

/** `interrupted`: its process died after the turn, before the run's end was recorded. */
export type JobRunOutcome = "running" | "ok" | "failed" | "stopped" | "skipped" | "interrupted";

/** One run of a job: `delivered` is what went to the chat, `reason` why nothing (or a failure) did. */
export interface JobRun {
  id: string;
  jobId: string;
  sessionKey: string;
  trigger: "schedule" | "manual";
  scheduledAt: number;
  firedAt: number;
  finishedAt?: number;
  outcome: JobRunOutcome;
  promptTokens: number;
  completionTokens: number;
  /** Undefined while no call of it had a price. */
  cost?: number;
  toolCalls: number;
  delivered?: string;
  reason?: string;
  /** The job's text when it fired: its history outlives the job. */
  message?: string;
}

/** How a run ended, as the turn's end tells it. */
export type JobRunEnd = Pick<JobRun, "outcome" | "toolCalls" | "delivered" | "reason"> & { at: number };

/** A slot taken: the job moves to `nextRunAt` (null: goes) and `run` (absent: skipped) enters the inbox, together. */
export interface JobSlot {
  jobId: string;
  scheduledAt: number;
  nextRunAt: number | null;
  run?: InboundMessage;
  ranAt?: number;
}

export interface PairingRequest {
  channel: string;
  userId: string;
  userName: string;
  code: string;
  expiresAt: number;
}

/** A stranger's open request as `request` returns it: whether it is new, and when they were last told. */
export type OpenRequest = PairingRequest & { isNew: boolean; toldAt?: number };

export type HelperStatus = "running" | "done" | "failed" | "timeout" | "cancelled" | "interrupted";

/** One spawned helper: `origin` is the message whose turn spawned it (its result is addressed there). */
export interface HelperRun {
  id: string;
  sessionKey: string;
  label?: string;
  task: string;
  model: string;
  status: HelperStatus;
  origin: InboundMessage;
  startedAt: number;
  finishedAt?: number;
  result?: string;
}

export interface ToolCallEntry {
  sessionKey: string;
  tool: string;
  arguments: string;
  result: string;
  durationMs: number;
}

/** `lastText`: the newest user or assistant text, cut to a preview. */
export interface ConversationSummary {
  sessionKey: string;
  messages: number;
  tokens: number;
  lastText?: string;
  lastRole?: string;
  lastAt: number;
}

/** A message (`role`, `text`) or a tool call as the audit has it (`ok`: its result is not an error). */
export type HistoryEntry = { kind: "message" | "tool"; at: number } & Partial<HistoryFields>;
type HistoryFields = Omit<ToolCallEntry, "sessionKey"> & { role: string; text: string; ok: boolean };

/** What `pincer status` shows about the database. */
export type StoreStatus = Record<
  "openConversations" | "messages" | "pendingInbound" | "pendingOutbound" | "deadLetters" | "toolCalls",
  number
> & { lastToolCall?: { tool: string; ok: boolean; at: number } };

/** How long pincer keeps what only grows (config `retention`, in days). */
export type RetentionAges = FileConfig["retention"];

/** A rough token count (about four characters a token) that is cheap and never underestimates much. */
export function estimateTokens(message: StoredMessage): number {
  const chars =
    (message.content?.length ?? 0) +
    (message.toolCalls?.reduce((n, c) => n + c.name.length + c.arguments.length + 16, 0) ?? 0);
  return Math.ceil(chars / 4) + 4;
}
