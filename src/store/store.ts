import { SqlApprovals } from "./approvals.js";
import { SqlAudit, SqlHelperRuns } from "./audit.js";
import type { Fence } from "./cluster.js";
import { SqlConversations } from "./conversations.js";
import { SqlForgetting } from "./forget.js";
import { SqlJobRuns } from "./job-runs.js";
import { SqlJobs } from "./jobs.js";
import { SqlJournal, SqlTurnSteps, SqlTurns } from "./journal.js";
import type { SqlMemory } from "./memory.js";
import { SqlDashboard, SqlStatus } from "./overview.js";
import { SqlPairing } from "./pairing.js";
import { SqlPeople } from "./people.js";
import { SqlRetention } from "./retention.js";
import { type Sql, SqlGroup, scalar, upsert } from "./sql.js";
import { estimateTokens, type StoredMessage } from "./types.js";
import { SqlUsage } from "./usage.js";

export type { AllowedEntry, Approval, ApprovalChoice, ApprovalState, NewApproval } from "./approvals.js";
export type { Identity, LinkOutcome, Person } from "./people.js";
export type * from "./types.js";
export { estimateTokens } from "./types.js";
export type { UsageEntry, UsageGroup, UsageSums } from "./usage.js";

/** Spoken replies per chat (`/voice on|off|auto`). */
export type VoiceMode = "off" | "auto" | "always";

/** One choice per chat, by conversation, who made it kept for the record: its model of `agent.models` (`/model NAME`)
 * or its spoken replies (`/voice`); a chat without one uses the config's. */
export class SqlChatChoice<T extends string> extends SqlGroup {
  constructor(
    db: Sql,
    private readonly table: "chat_models" | "chat_voice",
    private readonly column: "model" | "mode",
  ) {
    super(db);
  }

  get = (sessionKey: string) =>
    scalar<T>(this.db, `SELECT ${this.column} FROM ${this.table} WHERE session_key = $1`, [sessionKey]);

  /** Sets the chat's choice; undefined returns it to the config's. */
  set(sessionKey: string, choice: T | undefined, by: string): Promise<unknown> {
    if (choice === undefined) return this.db.run(`DELETE FROM ${this.table} WHERE session_key = $1`, [sessionKey]);
    const row = { sessionKey, [this.column]: choice, chosenBy: by, chosenAt: Date.now() };
    return this.db.run(...upsert(this.table, row, ["sessionKey"]));
  }
}

/** The store's groups on one engine's SQL, with that engine's memory (its own search index). */
export function storeOn(db: Sql, memory: SqlMemory, options: StoreOptions = {}) {
  const countTokens = options.countTokens ?? estimateTokens;
  const conversations = new SqlConversations(db, countTokens);
  return {
    journal: new SqlJournal(db),
    steps: new SqlTurnSteps(db),
    turns: new SqlTurns(db, countTokens),
    conversations,
    chatModels: new SqlChatChoice<string>(db, "chat_models", "model"),
    chatVoice: new SqlChatChoice<VoiceMode>(db, "chat_voice", "mode"),
    memory,
    jobs: new SqlJobs(db),
    jobRuns: new SqlJobRuns(db),
    pairing: new SqlPairing(db),
    people: new SqlPeople(db),
    forgetting: new SqlForgetting(db, () => conversations.dropCached()),
    audit: new SqlAudit(db),
    helperRuns: new SqlHelperRuns(db),
    dashboard: new SqlDashboard(db),
    retention: new SqlRetention(db),
    status: new SqlStatus(db),
    approvals: new SqlApprovals(db),
    usage: new SqlUsage(db),
  };
}

type Groups = ReturnType<typeof storeOn>;
/** What callers see of a group: its methods (one implementation serves both engines). */
type StoreGroups = { [G in keyof Groups]: { [K in keyof Groups[G]]: Groups[G][K] } };

/** Every durable thing pincer does, on both engines; what must happen together is one method, one transaction. */
export interface Store extends StoreGroups {
  readonly engine: "sqlite" | "postgres";
  /** Tells of rows any process wrote (PostgreSQL's LISTEN/NOTIFY); resolves with how to stop listening. */
  watch?(listener: (change: StoreChange) => void): Promise<() => Promise<void>>;
  /** Clustered mode: a turn's writes under its turn lease, each refused (FencedOutError) once the lease moved on. */
  fenced?(fence: Fence): FencedTurnWrites;
  /** Closes the store for good (the engine tidies up: SQLite folds its WAL back into the file). */
  close(): Promise<void>;
}

/** A hint that another process recorded something: look in the tables (a notification itself is never trusted). */
export type StoreChange = { kind: "outbox" } | { kind: "inbox" };

export interface StoreOptions {
  /** Tokens a message costs in a request, stored with it (default: a rough estimate). */
  countTokens?: (message: StoredMessage) => number;
  /** A short command's store (CLI): close() leaves the file's upkeep to the daemon that may be running. */
  brief?: boolean;
  /** A lost connection to a database server: told, never thrown (PostgreSQL). */
  onError?: (err: Error) => void;
  /** PostgreSQL: a query with no answer after this long fails (a silent partition, a stuck server); default 30 s. */
  queryTimeoutMs?: number;
}

/** A turn's writes made under a fence: each commits only while the fence is current in the database. */
export type FencedTurnWrites = Pick<Store, "steps" | "turns"> & Pick<Store["journal"], "recordTurnStart">;
