import type { InboundMessage } from "../bus/types.js";
import type { StoredMessage } from "./conversations.js";
import type { Database } from "./database.js";
import { inboxId } from "./journal.js";

/** What a turn had done when it was cut short: its model replies and tool results so far. */
export interface TurnSoFar {
  /** Assistant messages with tool calls and the tool results recorded, in order. */
  produced: StoredMessage[];
  /** Calls that started but have no result: they were running when the process died. */
  interrupted: Set<string>;
}

/**
 * The turn's journal, written as it happens (each row before the next step starts), so a turn cut
 * short by a crash resumes where it was. The rows go when the inbound message is completed.
 */
export class TurnSteps {
  constructor(private readonly db: Database) {}

  assistant(msg: InboundMessage, message: StoredMessage): void {
    this.insert(msg, "assistant", null, JSON.stringify(message));
  }

  started(msg: InboundMessage, callId: string): void {
    this.insert(msg, "started", callId, null);
  }

  result(msg: InboundMessage, callId: string, content: string): void {
    this.insert(msg, "result", callId, content);
  }

  load(msg: InboundMessage): TurnSoFar {
    const rows = this.db
      .prepare("SELECT kind, call_id, payload FROM turn_steps WHERE inbox_id = ? ORDER BY id")
      .all(inboxId(msg)) as Array<{ kind: string; call_id: string | null; payload: string | null }>;
    const produced: StoredMessage[] = [];
    const interrupted = new Set<string>();
    for (const row of rows) {
      if (row.kind === "assistant") produced.push(JSON.parse(row.payload ?? "{}") as StoredMessage);
      else if (row.kind === "started") interrupted.add(row.call_id ?? "");
      else {
        interrupted.delete(row.call_id ?? "");
        produced.push({ role: "tool", content: row.payload, toolCallId: row.call_id ?? "" });
      }
    }
    return { produced, interrupted };
  }

  private insert(msg: InboundMessage, kind: string, callId: string | null, payload: string | null): void {
    this.db
      .prepare("INSERT INTO turn_steps (inbox_id, kind, call_id, payload, created_at) VALUES (?, ?, ?, ?, ?)")
      .run(inboxId(msg), kind, callId, payload, Date.now());
  }
}
