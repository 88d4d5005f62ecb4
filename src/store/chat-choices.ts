import { type Sql, SqlGroup, scalar, upsert } from "./sql.js";

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
  async set(sessionKey: string, choice: T | undefined, by: string): Promise<void> {
    if (choice === undefined) {
      await this.db.run(`DELETE FROM ${this.table} WHERE session_key = $1`, [sessionKey]);
      return;
    }
    const row = { sessionKey, [this.column]: choice, chosenBy: by, chosenAt: Date.now() };
    await this.db.run(...upsert(this.table, row, ["sessionKey"]));
  }
}
