import type { InboundMessage } from "../../bus/types.js";
import type { HelperRun, HelperRunStore, HelperStatus } from "../store.js";
import type { Database } from "./database.js";

interface Row {
  id: string;
  session_key: string;
  label: string | null;
  task: string;
  model: string;
  status: HelperStatus;
  origin: string;
  started_at: number;
  finished_at: number | null;
  result: string | null;
}

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
      this.db.prepare("SELECT * FROM helper_runs WHERE status = 'running' ORDER BY started_at").all() as Row[]
    ).map(toRun);
  }

  /** The newest runs, newest first (for `pincer status`). */
  async recent(limit: number): Promise<HelperRun[]> {
    return (
      this.db.prepare("SELECT * FROM helper_runs ORDER BY started_at DESC, rowid DESC LIMIT ?").all(limit) as Row[]
    ).map(toRun);
  }
}

function toRun(row: Row): HelperRun {
  return {
    id: row.id,
    sessionKey: row.session_key,
    label: row.label ?? undefined,
    task: row.task,
    model: row.model,
    status: row.status,
    origin: JSON.parse(row.origin) as InboundMessage,
    startedAt: row.started_at,
    finishedAt: row.finished_at ?? undefined,
    result: row.result ?? undefined,
  };
}
