import type { Pruned, RetentionAges, RetentionStore } from "../store.js";
import type { Database } from "./database.js";

const DAY_MS = 24 * 60 * 60 * 1000;

export class SqliteRetention implements RetentionStore {
  constructor(private readonly db: Database) {}

  async prune(ages: Omit<RetentionAges, "mediaDays">, now = Date.now()): Promise<Pruned> {
    return pruneDatabase(this.db, ages, now);
  }
}

/**
 * Deletes tool-audit rows, conversations archived by `/new` (with their messages) and dead
 * letters older than their ages, in one transaction. The open conversation of a chat is never
 * touched, however old: the context window already bounds what the model sees of it.
 */
export function pruneDatabase(db: Database, ages: Omit<RetentionAges, "mediaDays">, now = Date.now()): Pruned {
  return db.transaction((): Pruned => {
    const auditRows = db
      .prepare("DELETE FROM tool_audit WHERE created_at < ?")
      .run(now - ages.auditDays * DAY_MS).changes;
    const archivedBefore = now - ages.archivedConversationDays * DAY_MS;
    const old = "SELECT id FROM conversations WHERE archived_at IS NOT NULL AND archived_at < ?";
    const messages = db.prepare(`DELETE FROM messages WHERE conversation_id IN (${old})`).run(archivedBefore).changes;
    const conversations = db
      .prepare("DELETE FROM conversations WHERE archived_at IS NOT NULL AND archived_at < ?")
      .run(archivedBefore).changes;
    const deadLetters = db
      .prepare("DELETE FROM outbox WHERE status = 'dead' AND finished_at < ?")
      .run(now - ages.deadLetterDays * DAY_MS).changes;
    return { auditRows, conversations, messages, deadLetters };
  })();
}
