import type { InboundMessage, OutboundMessage } from "../bus/types.js";
import type { ConversationStore, StoredMessage } from "./conversations.js";
import type { Database } from "./database.js";
import type { SqliteJournal } from "./journal.js";

/** The end of a turn as one SQLite transaction, so a crash keeps all of it or none. */
export class TurnStore {
  constructor(
    private readonly db: Database,
    private readonly conversations: ConversationStore,
    private readonly journal: SqliteJournal,
  ) {}

  /**
   * Appends the turn's messages to the conversation, marks the inbound message done and records
   * the reply in the outbox, all or nothing. Returns the reply's outbox id.
   */
  finishTurn(msg: InboundMessage, messages: StoredMessage[], out: OutboundMessage | undefined): number | undefined {
    return this.db.transaction(() => {
      if (messages.length > 0) this.conversations.append(msg.sessionKey, messages);
      this.journal.completeInbound(msg);
      return out ? this.journal.recordOutbound(out) : undefined;
    })();
  }

  /**
   * Closes messages that will not be run (a /stop or /new while they waited for the model)
   * with one notice, all or nothing; with `archive`, the session's conversation ends too.
   */
  setAside(messages: InboundMessage[], out: OutboundMessage, archive?: string): number {
    return this.db.transaction(() => {
      if (archive !== undefined) this.conversations.archive(archive);
      for (const msg of messages) this.journal.completeInbound(msg);
      return this.journal.recordOutbound(out);
    })();
  }
}
