import { type HelperRunRow, toRun } from "../rows.js";
import type { HelperRun, HelperRunStore, HelperStatus } from "../store.js";
import type { Database } from "./database.js";

/** Where a result longer than this is cut: the table is for `pincer status` and forensics. */
const RESULT_CHARS = 20_000;

/** Spawned helpers' runs in SQLite, so a restart knows which were cut short. */
export class SqliteHelperRuns implements HelperRunStore {
  constructor(private readonly db: Database) {}

  async start(run: Omit<HelperRun, "status" | "finishedAt" | "result">): Promise<void> {
    this.db
      .prepare(
        "INSERT INTO helper_runs (id, session_key, label, task, model, status, origin, started_at) VALUES (?, ?, ?, ?, ?, 'running', ?, ?)",
      )
      .run(run.id, run.sessionKey, run.label ?? null, run.task, run.model, JSON.stringify(run.origin), run.startedAt);
  }

  async finish(id: string, status: Exclude<HelperStatus, "running">, result: string, at = Date.now()): Promise<void> {
    this.db
      .prepare("UPDATE helper_runs SET status = ?, result = ?, finished_at = ? WHERE id = ? AND status = 'running'")
      .run(status, result.slice(0, RESULT_CHARS), at, id);
  }

  /** Runs still marked running: after a restart, the ones the previous process never finished. */
  async running(): Promise<HelperRun[]> {
    return (
      this.db.prepare("SELECT * FROM helper_runs WHERE status = 'running' ORDER BY started_at").all() as HelperRunRow[]
    ).map(toRun);
  }

  /** The newest runs, newest first (for `pincer status`). */
  async recent(limit: number): Promise<HelperRun[]> {
    return (
      this.db
        .prepare("SELECT * FROM helper_runs ORDER BY started_at DESC, rowid DESC LIMIT ?")
        .all(limit) as HelperRunRow[]
    ).map(toRun);
  }
}
