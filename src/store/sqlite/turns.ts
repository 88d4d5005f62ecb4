import type { InboundMessage, OutboundMessage } from "../../bus/types.js";
import { estimateTokens, type StoredMessage, type TurnStore } from "../store.js";
import { appendMessages, archiveConversation } from "./conversations.js";
import type { Database } from "./database.js";
import { completeInbound, recordOutbound } from "./journal.js";

/** The end of a turn as one SQLite transaction, so a crash keeps all of it or none. */
export class SqliteTurns implements TurnStore {
  constructor(
    private readonly db: Database,
    private readonly countTokens: (message: StoredMessage) => number = estimateTokens,
  ) {}

  async finishTurn(
    msg: InboundMessage,
    messages: StoredMessage[],
    out: OutboundMessage | undefined,
  ): Promise<number | undefined> {
    return this.db.transaction(() => {
      if (messages.length > 0) appendMessages(this.db, this.countTokens, msg.sessionKey, messages);
      completeInbound(this.db, msg);
      return out ? recordOutbound(this.db, out) : undefined;
    })();
  }

  async setAside(messages: InboundMessage[], out: OutboundMessage, archive?: string): Promise<number> {
    return this.db.transaction(() => {
      if (archive !== undefined) archiveConversation(this.db, archive);
      for (const msg of messages) completeInbound(this.db, msg);
      return recordOutbound(this.db, out);
    })();
  }
}
