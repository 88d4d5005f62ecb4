import type { StatusStore, StoreStatus } from "../store.js";
import type { Database } from "./database.js";

export class SqliteStatus implements StatusStore {
  constructor(private readonly db: Database) {}

  async summary(): Promise<StoreStatus> {
    return storeStatus(this.db);
  }
}

function storeStatus(db: Database): StoreStatus {
  const count = (sql: string) => db.prepare(sql).pluck().get() as number;
  const last = db.prepare("SELECT tool, ok, created_at AS at FROM tool_audit ORDER BY id DESC LIMIT 1").get() as
    | { tool: string; ok: number; at: number }
    | undefined;
  return {
    openConversations: count("SELECT count(*) FROM conversations WHERE archived_at IS NULL"),
    messages: count("SELECT count(*) FROM messages"),
    pendingInbound: count("SELECT count(*) FROM inbox WHERE status = 'pending'"),
    pendingOutbound: count("SELECT count(*) FROM outbox WHERE status = 'pending'"),
    deadLetters: count("SELECT count(*) FROM outbox WHERE status = 'dead'"),
    toolCalls: count("SELECT count(*) FROM tool_audit"),
    lastToolCall: last && { tool: last.tool, ok: last.ok === 1, at: last.at },
  };
}
