import type { InboundMessage } from "../../bus/types.js";
import { inboxId, turnSoFar } from "../rows.js";
import type { StoredMessage, TurnSoFar, TurnStepStore } from "../store.js";
import type { Database } from "./database.js";

export class SqliteTurnSteps implements TurnStepStore {
  constructor(private readonly db: Database) {}

  async assistant(msg: InboundMessage, message: StoredMessage): Promise<void> {
    this.insert(msg, "assistant", null, JSON.stringify(message));
  }

  async started(msg: InboundMessage, callId: string): Promise<void> {
    this.insert(msg, "started", callId, null);
  }

  async result(msg: InboundMessage, callId: string, content: string): Promise<void> {
    this.insert(msg, "result", callId, content);
  }

  async load(msg: InboundMessage): Promise<TurnSoFar> {
    const rows = this.db
      .prepare("SELECT kind, call_id, payload FROM turn_steps WHERE inbox_id = ? ORDER BY id")
      .all(inboxId(msg)) as Array<{ kind: string; call_id: string | null; payload: string | null }>;
    return turnSoFar(rows);
  }

  private insert(msg: InboundMessage, kind: string, callId: string | null, payload: string | null): void {
    this.db
      .prepare("INSERT INTO turn_steps (inbox_id, kind, call_id, payload, created_at) VALUES (?, ?, ?, ?, ?)")
      .run(inboxId(msg), kind, callId, payload, Date.now());
  }
}
