import type { OutboundMessage } from "../bus/types.js";
import { recordOutbound } from "./journal.js";
import { type Sql, withoutNulls } from "./sql.js";

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

/** An entry of a conversation's "always allowed" list. */
export interface AllowedEntry {
  sessionKey: string;
  entry: string;
  addedBy: string;
  addedAt: number;
}

const COLUMNS = `id, session_key AS "sessionKey", turn_key AS "turnKey", tool_call_id AS "toolCallId", tool, summary,
  remember, decider, created_at AS "createdAt", expires_at AS "expiresAt", state, choice, decided_by AS "decidedBy",
  decided_at AS "decidedAt", prompt_outbox_id AS "promptOutboxId"`;

/** Pending approvals and each conversation's "always allowed" list; every decision is taken once. */
export class SqlApprovals {
  constructor(private readonly db: Sql) {}

  /**
   * The approval of this call: the one recorded before (a resumed turn, a second process) or a
   * new one, recorded with its prompt in the outbox in one transaction. `created` tells which.
   */
  request(approval: NewApproval, prompt: OutboundMessage): Promise<{ approval: Approval; created: boolean }> {
    return this.db.transaction(async (tx) => {
      const a = approval;
      const inserted = await tx.run(
        `INSERT INTO approvals (id, session_key, turn_key, tool_call_id, tool, summary, remember, decider, created_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (turn_key, tool_call_id) DO NOTHING`,
        [
          a.id,
          a.sessionKey,
          a.turnKey,
          a.toolCallId,
          a.tool,
          a.summary,
          a.remember,
          a.decider ?? null,
          a.createdAt,
          a.expiresAt,
        ],
      );
      if (inserted === 1) {
        const outboxId = await recordOutbound(tx, prompt);
        await tx.run("UPDATE approvals SET prompt_outbox_id = $1 WHERE id = $2", [outboxId, a.id]);
      }
      const [row] = await tx.rows<Approval>(
        `SELECT ${COLUMNS} FROM approvals WHERE turn_key = $1 AND tool_call_id = $2`,
        [a.turnKey, a.toolCallId],
      );
      return { approval: withoutNulls(row), created: inserted === 1 };
    });
  }

  async get(id: string): Promise<Approval | undefined> {
    const [row] = await this.db.rows<Approval>(`SELECT ${COLUMNS} FROM approvals WHERE id = $1`, [id]);
    return row && withoutNulls(row);
  }

  /**
   * Decides a pending approval still within its time: one conditional update, so of a double tap,
   * two devices, a replayed update or two processes exactly one wins; undefined for the others.
   * The winner's "always" joins the conversation's list, and `edit` (the prompt rewritten) goes
   * to the outbox, all in one transaction.
   */
  decide(
    id: string,
    choice: ApprovalChoice,
    by: string,
    now: number,
    edit: (decided: Approval) => OutboundMessage | undefined,
  ): Promise<Approval | undefined> {
    return this.db.transaction(async (tx) => {
      const [row] = await tx.rows<Approval>(
        `UPDATE approvals SET state = $2, choice = $3, decided_by = $4, decided_at = $5
          WHERE id = $1 AND state = 'pending' AND expires_at > $5 RETURNING ${COLUMNS}`,
        [id, choice === "deny" ? "denied" : "allowed", choice, by, now],
      );
      if (!row) return undefined;
      if (choice === "always") {
        await tx.run(
          `INSERT INTO always_allowed (session_key, entry, added_by, added_at) VALUES ($1, $2, $3, $4)
           ON CONFLICT (session_key, entry) DO NOTHING`,
          [row.sessionKey, row.remember, by, now],
        );
      }
      return this.edited(tx, withoutNulls(row), edit);
    });
  }

  /** Ends a pending approval unanswered (its time ran out, or its turn ended); undefined when already decided. */
  expire(
    id: string,
    now: number,
    edit: (expired: Approval) => OutboundMessage | undefined,
  ): Promise<Approval | undefined> {
    return this.db.transaction(async (tx) => {
      const [row] = await tx.rows<Approval>(
        `UPDATE approvals SET state = 'expired', decided_at = $2 WHERE id = $1 AND state = 'pending' RETURNING ${COLUMNS}`,
        [id, now],
      );
      return row && this.edited(tx, withoutNulls(row), edit);
    });
  }

  /** Whether this turn's user already denied exactly this (a model asking again is not asked again). */
  async deniedInTurn(turnKey: string, summary: string): Promise<boolean> {
    const rows = await this.db.rows(
      "SELECT 1 FROM approvals WHERE turn_key = $1 AND summary = $2 AND state = 'denied'",
      [turnKey, summary],
    );
    return rows.length > 0;
  }

  /** Pending approvals, oldest first (the control page). */
  pending(): Promise<Approval[]> {
    return this.db
      .rows<Approval>(`SELECT ${COLUMNS} FROM approvals WHERE state = 'pending' ORDER BY created_at LIMIT 100`)
      .then((rows) => rows.map(withoutNulls));
  }

  async alwaysAllowed(sessionKey: string): Promise<string[]> {
    const rows = await this.db.rows<{ entry: string }>("SELECT entry FROM always_allowed WHERE session_key = $1", [
      sessionKey,
    ]);
    return rows.map((row) => row.entry);
  }

  /** Every conversation's list (the control page, where an entry is revoked). */
  allowedEntries(): Promise<AllowedEntry[]> {
    return this.db.rows<AllowedEntry>(
      `SELECT session_key AS "sessionKey", entry, added_by AS "addedBy", added_at AS "addedAt"
         FROM always_allowed ORDER BY session_key, added_at LIMIT 500`,
    );
  }

  /** Takes an entry off a conversation's list; false when it was not there. */
  async revoke(sessionKey: string, entry: string): Promise<boolean> {
    return (
      (await this.db.run("DELETE FROM always_allowed WHERE session_key = $1 AND entry = $2", [sessionKey, entry])) > 0
    );
  }

  private async edited(
    tx: Sql,
    row: Approval,
    edit: (approval: Approval) => OutboundMessage | undefined,
  ): Promise<Approval> {
    const message = row.promptOutboxId === undefined ? undefined : edit(row);
    if (message) await recordOutbound(tx, message);
    return row;
  }
}
