import type { StoredMessage } from "./types.js";

/** A stored message with its row id, the order of a conversation's messages. */
export interface HistoryRow {
  id: number;
  message: StoredMessage;
}

/** Which conversation a cached history is of: ids of deleted rows can come back in SQLite. */
export interface ConversationHead {
  id: number;
  sessionKey: string;
  createdAt: number;
  /** Messages up to this id are trimmed out of the prompt and left out. */
  through: number;
}

/** The newest messages after the trim point (`through`), oldest first; `complete` when they are all of them. */
export interface HistoryWindow {
  rows: HistoryRow[];
  complete: boolean;
}

type Entry = HistoryWindow & { head: ConversationHead };

/** Conversations kept; the least recently read goes first. */
const CONVERSATIONS = 32;
/** Rows are kept while they fit this many times the last budget asked for. */
const SLACK = 1.25;

/** The newest history of the most recently active conversations: a turn reads only the messages added since. SQLite
 * only: a row id, taken in the one writer's lock, is above every committed one, so ids above the last seen are all
 * that is new, whoever wrote them (PostgreSQL hands ids out before commit, out of order). */
export class HistoryCache {
  private readonly entries = new Map<number, Entry>();

  lookup(head: ConversationHead): HistoryWindow | undefined {
    const entry = this.entries.get(head.id);
    if (!entry) return undefined;
    const was = entry.head;
    if (was.sessionKey !== head.sessionKey || was.createdAt !== head.createdAt || head.through < was.through) {
      this.entries.delete(head.id);
      return undefined;
    }
    if (head.through > was.through) {
      entry.rows = entry.rows.filter((r) => r.id > head.through);
      entry.head = head;
    }
    this.entries.delete(head.id);
    this.entries.set(head.id, entry);
    return entry;
  }

  /** Forgets every conversation: rows deleted under it (`/forget`) must not come back from memory. */
  clear = () => this.entries.clear();

  /** Remembers a conversation's newest rows (oldest first), trimmed to what `budget` could use again. */
  store(head: ConversationHead, rows: HistoryRow[], complete: boolean, budget: number): void {
    const keep = fitFrom(rows, budget * SLACK);
    const trimmed = keep > 0;
    this.entries.delete(head.id);
    this.entries.set(head.id, { head, rows: trimmed ? rows.slice(keep) : rows, complete: complete && !trimmed });
    while (this.entries.size > CONVERSATIONS) this.entries.delete(this.entries.keys().next().value as number);
  }
}

/** The newest rows fitting `budget`, oldest first, as budgeted() picks them; undefined when more must be read. */
export function pickNewest(rows: readonly HistoryRow[], complete: boolean, budget: number): HistoryWindow | undefined {
  const from = fitFrom(rows, budget);
  if (from === 0 && !complete) return undefined;
  return { rows: rows.slice(from), complete: from === 0 };
}

/** Where the newest rows whose tokens add up to at most `budget` begin. */
function fitFrom(rows: readonly HistoryRow[], budget: number): number {
  let used = 0;
  let from = rows.length;
  while (from > 0 && used + (rows[from - 1].message.tokens ?? 0) <= budget) {
    used += rows[from - 1].message.tokens ?? 0;
    from--;
  }
  return from;
}
