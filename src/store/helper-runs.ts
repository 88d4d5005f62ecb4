import type { InboundMessage } from "../bus/types.js";
import type { Database } from "./database.js";

export type HelperStatus = "running" | "done" | "failed" | "timeout" | "cancelled" | "interrupted";

/** One spawned helper as stored: what it was asked, where its result goes, how it ended. */
export interface HelperRun {
  id: string;
  sessionKey: string;
  label?: string;
  task: string;
  model: string;
  status: HelperStatus;
  /** The message whose turn spawned it: its result is addressed to that conversation. */
  origin: InboundMessage;
  startedAt: number;
  finishedAt?: number;
  result?: string;
}

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
export class HelperRunStore {
  constructor(private readonly db: Database) {}

  start(run: Omit<HelperRun, "status" | "finishedAt" | "result">): void {
    this.db
      .prepare(
        "INSERT INTO helper_runs (id, session_key, label, task, model, status, origin, started_at) VALUES (?, ?, ?, ?, ?, 'running', ?, ?)",
      )
      .run(run.id, run.sessionKey, run.label ?? null, run.task, run.model, JSON.stringify(run.origin), run.startedAt);
  }

  finish(id: string, status: Exclude<HelperStatus, "running">, result: string, at = Date.now()): void {
    this.db
      .prepare("UPDATE helper_runs SET status = ?, result = ?, finished_at = ? WHERE id = ? AND status = 'running'")
      .run(status, result.slice(0, RESULT_CHARS), at, id);
  }

  /** Runs still marked running: after a restart, the ones the previous process never finished. */
  running(): HelperRun[] {
    return (
      this.db.prepare("SELECT * FROM helper_runs WHERE status = 'running' ORDER BY started_at").all() as Row[]
    ).map(toRun);
  }

  /** The newest runs, newest first (for `pincer status`). */
  recent(limit: number): HelperRun[] {
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
