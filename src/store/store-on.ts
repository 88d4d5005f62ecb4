import { SqlApprovals } from "./approvals.js";
import { SqlChatModels } from "./chat-models.js";
import { SqlConversations } from "./conversations.js";
import { SqlJobs } from "./jobs.js";
import { SqlJournal, SqlTurnSteps, SqlTurns } from "./journal.js";
import type { SqlMemory } from "./memory.js";
import { SqlPairing } from "./pairing.js";
import type { Sql } from "./sql.js";
import { estimateTokens, type Store, type StoreOptions } from "./store.js";
import { SqlUsage } from "./usage.js";
import { SqlAudit, SqlDashboard, SqlHelperRuns, SqlRetention, SqlStatus } from "./views.js";

/** The store's groups on one engine's SQL, with that engine's memory (its own search index). */
export function storeOn(
  db: Sql,
  memory: SqlMemory,
  options: StoreOptions = {},
): Omit<Store, "engine" | "watch" | "fenced" | "close"> {
  const countTokens = options.countTokens ?? estimateTokens;
  return {
    journal: new SqlJournal(db),
    steps: new SqlTurnSteps(db),
    turns: new SqlTurns(db, countTokens),
    conversations: new SqlConversations(db, countTokens),
    chatModels: new SqlChatModels(db),
    memory,
    jobs: new SqlJobs(db),
    pairing: new SqlPairing(db, options.pairing),
    audit: new SqlAudit(db),
    helperRuns: new SqlHelperRuns(db),
    dashboard: new SqlDashboard(db),
    retention: new SqlRetention(db),
    status: new SqlStatus(db),
    approvals: new SqlApprovals(db),
    usage: new SqlUsage(db),
  };
}
