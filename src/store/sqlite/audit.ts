import type { AuditStore, ToolCallEntry } from "../store.js";
import type { Database } from "./database.js";

const PREVIEW_CHARS = 2000;

/** Remembers every tool call (arguments and the start of the result) for `pincer status` and forensics. */
export class SqliteAudit implements AuditStore {
  constructor(private readonly db: Database) {}

  async record(entry: ToolCallEntry): Promise<void> {
    this.db
      .prepare(
        "INSERT INTO tool_audit (session_key, tool, arguments, result, ok, duration_ms, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
      )
      .run(
        entry.sessionKey,
        entry.tool,
        entry.arguments.slice(0, PREVIEW_CHARS),
        entry.result.slice(0, PREVIEW_CHARS),
        entry.result.startsWith("Error:") ? 0 : 1,
        Math.round(entry.durationMs),
        Date.now(),
      );
  }
}
