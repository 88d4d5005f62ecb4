import { inboundFromStored } from "../bus/stored-inbound.js";
import { columns, insert, SqlGroup, withoutNulls } from "./sql.js";
import type { HelperRun, HelperStatus, ToolCallEntry } from "./types.js";

const PREVIEW_CHARS = 2000;
/** Where a helper's result longer than this is cut: the table is for `pincer status` and forensics. */
const RESULT_CHARS = 20_000;
const HELPER_FIELDS = ["id", "sessionKey", "label", "task", "model", "status", "origin", "startedAt"] as const;

/** Remembers every tool call (arguments and the start of the result) for `pincer status` and forensics. */
export class SqlAudit extends SqlGroup {
  async record({ sessionKey, tool, arguments: args, result, durationMs }: ToolCallEntry): Promise<void> {
    const row = {
      sessionKey,
      tool,
      arguments: args.slice(0, PREVIEW_CHARS),
      result: result.slice(0, PREVIEW_CHARS),
      ok: !result.startsWith("Error:"),
      durationMs: Math.round(durationMs),
      createdAt: Date.now(),
    };
    await this.db.run(...insert("tool_audit", row));
  }
}

/** Spawned helpers' runs, so a restart knows which were cut short. */
export class SqlHelperRuns extends SqlGroup {
  async start(run: Omit<HelperRun, "status" | "finishedAt" | "result">): Promise<void> {
    const row = { ...run, status: "running", origin: JSON.stringify(run.origin) };
    await this.db.run(...insert("helper_runs", row, HELPER_FIELDS));
  }

  async finish(id: string, status: Exclude<HelperStatus, "running">, result: string, at = Date.now()): Promise<void> {
    await this.db.run(
      "UPDATE helper_runs SET status = $1, result = $2, finished_at = $3 WHERE id = $4 AND status = 'running'",
      [status, result.slice(0, RESULT_CHARS), at, id],
    );
  }

  /** Runs still marked running: after a restart, the ones the previous process never finished. */
  running = () => this.list(`WHERE status = 'running' ORDER BY started_at, ${this.db.seq}`, []);
  recent = (limit: number) => this.list(`ORDER BY started_at DESC, ${this.db.seq} DESC LIMIT $1`, [limit]);

  private async list(rest: string, params: unknown[]): Promise<HelperRun[]> {
    const select = `SELECT ${columns([...HELPER_FIELDS, "finishedAt", "result"])} FROM helper_runs ${rest}`;
    const rows = await this.db.rows<Omit<HelperRun, "origin"> & { origin: string }>(select, params);
    return rows.map((row) => ({ ...withoutNulls(row), origin: inboundFromStored(row.origin) }));
  }
}
