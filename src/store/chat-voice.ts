import { SqlGroup, scalar, upsert } from "./sql.js";

/** Spoken replies per chat: each chat's `/voice on|off|auto`, by conversation; a chat without one uses the config's. */
export type VoiceMode = "off" | "auto" | "always";

export class SqlChatVoice extends SqlGroup {
  get = (sessionKey: string) =>
    scalar<VoiceMode>(this.db, "SELECT mode FROM chat_voice WHERE session_key = $1", [sessionKey]);

  /** Sets the chat's mode (who chose it kept for the record). */
  async set(sessionKey: string, mode: VoiceMode, by: string): Promise<void> {
    await this.db.run(
      ...upsert("chat_voice", { sessionKey, mode, chosenBy: by, chosenAt: Date.now() }, ["sessionKey"]),
    );
  }
}
