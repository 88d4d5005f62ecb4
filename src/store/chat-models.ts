import { SqlGroup, scalar, upsert } from "./sql.js";

/** Each chat's choice of `agent.models` (`/model NAME`), by conversation; a chat without one uses the default. */
export class SqlChatModels extends SqlGroup {
  get = (sessionKey: string) =>
    scalar<string>(this.db, "SELECT model FROM chat_models WHERE session_key = $1", [sessionKey]);

  /** Sets the chat's model (who chose it kept for the record); undefined returns it to the default. */
  async set(sessionKey: string, model: string | undefined, by: string): Promise<void> {
    if (model === undefined) {
      await this.db.run("DELETE FROM chat_models WHERE session_key = $1", [sessionKey]);
      return;
    }
    const choice = { sessionKey, model, chosenBy: by, chosenAt: Date.now() };
    await this.db.run(...upsert("chat_models", choice, ["sessionKey"]));
  }
}
