import { estimateTokens, type Store, type StoreOptions } from "../store.js";
import { SqliteAudit } from "./audit.js";
import { SqliteConversations } from "./conversations.js";
import { SqliteDashboard } from "./dashboard.js";
import { closeDatabase, type Database, openDatabase } from "./database.js";
import { SqliteHelperRuns } from "./helper-runs.js";
import { SqliteJobs } from "./jobs.js";
import { SqliteJournal } from "./journal.js";
import { SqliteMemory } from "./memory.js";
import { SqlitePairing } from "./pairing.js";
import { SqliteRetention } from "./retention.js";
import { SqliteStatus } from "./status.js";
import { SqliteTurnSteps } from "./turn-steps.js";
import { SqliteTurns } from "./turns.js";

/** The embedded engine: one SQLite file (WAL) under PINCER_HOME, one connection, shared by every group. */
export interface SqliteStore extends Store {
  readonly engine: "sqlite";
  /** The connection itself, for tests that look at rows directly. */
  readonly db: Database;
}

/** Opens (creating and migrating if needed) the SQLite database at `path` (":memory:" for tests). */
export function openSqliteStore(path: string, options: StoreOptions = {}): SqliteStore {
  const db = openDatabase(path);
  const countTokens = options.countTokens ?? estimateTokens;
  return {
    engine: "sqlite",
    db,
    journal: new SqliteJournal(db),
    steps: new SqliteTurnSteps(db),
    turns: new SqliteTurns(db, countTokens),
    conversations: new SqliteConversations(db, countTokens),
    memory: new SqliteMemory(db),
    jobs: new SqliteJobs(db),
    pairing: new SqlitePairing(db, options.pairing),
    audit: new SqliteAudit(db),
    helperRuns: new SqliteHelperRuns(db),
    dashboard: new SqliteDashboard(db),
    retention: new SqliteRetention(db),
    status: new SqliteStatus(db),
    async close() {
      if (options.brief) db.close();
      else closeDatabase(db);
    },
  };
}
