import type { OutboundMessage } from "../bus/types.js";
import { recordOutbound } from "./journal.js";
import { columns, exists, insert, type Sql, SqlGroup, scalar, upsert, withoutNulls } from "./sql.js";

export type ApprovalState = "pending" | "allowed" | "denied" | "expired";
export type ApprovalChoice = "once" | "always" | "deny";

/** A tool call waiting for (or past) a person's yes or no. */
export interface Approval {
  id: string;
  /** The conversation asked: the prompt is posted there, and only taps from there count. */
  sessionKey: string;
  /** The run the call belongs to (its session and inbound message): with the call id, one approval per call. */
  turnKey: string;
  toolCallId: string;
  tool: string;
  /** Exactly what runs, as the prompt shows it. */
  summary: string;
  /** The "always allowed" entry an Always allow adds (`exec:<command>`, `tool:<name>`). */
  remember: string;
  /** `channel:userId` of the one person who may decide in the chat; absent: only the control page. */
  decider?: string;
  createdAt: number;
  expiresAt: number;
  state: ApprovalState;
  choice?: ApprovalChoice;
  decidedBy?: string;
  decidedAt?: number;
  /** The outbox row that posted the prompt (edited once decided). */
  promptOutboxId?: number;
}

export type NewApproval = Omit<Approval, "state" | "choice" | "decidedBy" | "decidedAt" | "promptOutboxId">;

export interface AllowedEntry {
  sessionKey: string;
  entry: string;
  addedBy: string;
  addedAt: number;
}

const CALL_FIELDS = ["id", "sessionKey", "turnKey", "toolCallId", "tool", "summary", "remember", "decider"] as const;
const NEW_FIELDS = [...CALL_FIELDS, "createdAt", "expiresAt"] as const;
const COLUMNS = columns([...NEW_FIELDS, "state", "choice", "decidedBy", "decidedAt", "promptOutboxId"]);
/** Rewrites a decided approval's prompt (undefined: leaves it). */
type Edit = (approval: Approval) => OutboundMessage | undefined;

/** Pending approvals and each conversation's "always allowed" list; every decision is taken once. */
export class SqlApprovals extends SqlGroup {
  /** The call's approval: the one recorded before, or a new one recorded with its prompt in one transaction. */
  request(approval: NewApproval, prompt: OutboundMessage): Promise<{ approval: Approval; created: boolean }> {
    return this.db.transaction(async (tx) => {
      const conflict = "ON CONFLICT (turn_key, tool_call_id) DO NOTHING";
      const created = (await tx.run(...insert("approvals", approval, NEW_FIELDS, conflict))) === 1;
      if (created) {
        const outboxId = await recordOutbound(tx, prompt);
        await tx.run("UPDATE approvals SET prompt_outbox_id = $1 WHERE id = $2", [outboxId, approval.id]);
      }
      const [row] = await tx.rows<Approval>(
        `SELECT ${COLUMNS} FROM approvals WHERE turn_key = $1 AND tool_call_id = $2`,
        [approval.turnKey, approval.toolCallId],
      );
      return { approval: withoutNulls(row), created };
    });
  }

  async get(id: string): Promise<Approval | undefined> {
    const [row] = await this.db.rows<Approval>(`SELECT ${COLUMNS} FROM approvals WHERE id = $1`, [id]);
    return row && withoutNulls(row);
  }

  /** Decides a pending approval in time by one conditional update: of a double tap, two devices, a replay or two
   * processes exactly one wins (undefined for the others); its "always" and the prompt's `edit` are one transaction. */
  decide(id: string, choice: ApprovalChoice, by: string, now: number, edit: Edit): Promise<Approval | undefined> {
    const decide = `UPDATE approvals SET state = $2, choice = $3, decided_by = $4, decided_at = $5
      WHERE id = $1 AND state = 'pending' AND expires_at > $5 RETURNING ${COLUMNS}`;
    const params = [id, choice === "deny" ? "denied" : "allowed", choice, by, now];
    return this.ended(decide, params, edit, async (tx, row) => {
      if (choice !== "always") return;
      const allowed = { sessionKey: row.sessionKey, entry: row.remember, addedBy: by, addedAt: now };
      await tx.run(...upsert("always_allowed", allowed, ["sessionKey", "entry"]));
    });
  }

  /** Ends a pending approval unanswered (its time ran out, or its turn ended); undefined when already decided. */
  expire(id: string, now: number, edit: Edit): Promise<Approval | undefined> {
    const expire = `UPDATE approvals SET state = 'expired', decided_at = $2 WHERE id = $1 AND state = 'pending'
      RETURNING ${COLUMNS}`;
    return this.ended(expire, [id, now], edit);
  }

  /** Whether this turn's user already denied exactly this (a model asking again is not asked again). */
  deniedInTurn(turnKey: string, summary: string): Promise<boolean> {
    const denied = "SELECT 1 FROM approvals WHERE turn_key = $1 AND summary = $2 AND state = 'denied'";
    return exists(this.db, denied, [turnKey, summary]);
  }

  async pending(): Promise<Approval[]> {
    const pending = `SELECT ${COLUMNS} FROM approvals WHERE state = 'pending' ORDER BY created_at LIMIT 100`;
    return (await this.db.rows<Approval>(pending)).map(withoutNulls);
  }

  /** When `entry` was (last) always allowed in this conversation; undefined when it is not. */
  allowedAt(sessionKey: string, entry: string): Promise<number | undefined> {
    const allowed = "SELECT added_at FROM always_allowed WHERE session_key = $1 AND entry = $2";
    return scalar<number>(this.db, allowed, [sessionKey, entry]);
  }

  /** Every conversation's list (the control page, where an entry is revoked). */
  allowedEntries = () =>
    this.db.rows<AllowedEntry>(
      `SELECT ${columns(["sessionKey", "entry", "addedBy", "addedAt"])} FROM always_allowed
        ORDER BY session_key, added_at LIMIT 500`,
    );

  /** Takes an entry off a conversation's list; false when it was not there. */
  async revoke(sessionKey: string, entry: string): Promise<boolean> {
    const revoke = "DELETE FROM always_allowed WHERE session_key = $1 AND entry = $2";
    return (await this.db.run(revoke, [sessionKey, entry])) > 0;
  }

  /** The conditional update ending a pending approval and, if it won, `also` and the prompt's edit, in one transaction. */
  private ended(
    update: string,
    params: unknown[],
    edit: Edit,
    also?: (tx: Sql, row: Approval) => Promise<void>,
  ): Promise<Approval | undefined> {
    return this.db.transaction(async (tx) => {
      const [ended] = await tx.rows<Approval>(update, params);
      if (!ended) return undefined;
      const row = withoutNulls(ended);
      await also?.(tx, row);
      const message = row.promptOutboxId === undefined ? undefined : edit(row);
      if (message) await recordOutbound(tx, message);
      return row;
    });
  }
}
