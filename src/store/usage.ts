import { agentOf } from "../bus/types.js";
import { insert, SqlGroup } from "./sql.js";

/** One model call as counted: the endpoint's tokens, or pincer's estimate (`estimated`). */
export interface UsageEntry {
  sessionKey: string;
  /** conversation | reminder | heartbeat | helper | consolidation */
  kind: string;
  model: string;
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
  estimated: boolean;
  /** At the prices of the call's time; undefined when the model has no price. */
  cost?: number;
  at: number;
  /** Who the call was made for (`channel:userId`); absent for pincer's own runs (the heartbeat, consolidation). */
  person?: string;
  /** The scheduled run (its inbound id) the call was made for: the job's history and caps sum by it. */
  runId?: string;
}

const COUNTS = ["promptTokens", "completionTokens", "cachedTokens"] as const;

/** Sums of one group of calls: `unpriced` calls have no cost, `estimated` ones pincer counted. */
export type UsageSums = Record<(typeof COUNTS)[number] | "calls" | "cost" | "unpriced" | "estimated", number>;

/** This month's calls from `since` on, by kind and model, for this chat or not, today or not. */
export type UsageGroup = UsageSums & { kind: string; model: string; here: boolean; today: boolean };

const SUMS = `count(*) AS calls, sum(prompt_tokens) AS "promptTokens", sum(completion_tokens) AS "completionTokens",
  sum(cached_tokens) AS "cachedTokens", coalesce(sum(cost), 0) AS cost,
  sum(CASE WHEN cost IS NULL THEN 1 ELSE 0 END) AS unpriced, sum(estimated) AS estimated`;
const USAGE_FIELDS = [
  "sessionKey",
  "agent",
  "kind",
  "model",
  ...COUNTS,
  "estimated",
  "cost",
  "createdAt",
  "person",
  "runId",
] as const;
/** The chart's days are put together from quarter hours, so every zone's midnight falls on a slot's edge. */
export const SLOT_MS = 15 * 60_000;

/** Model calls and what they cost: what /usage, `pincer usage`, the page and the budgets read. */
export class SqlUsage extends SqlGroup {
  /** One row per call: processes recording at once never overwrite each other. */
  async record(entry: UsageEntry): Promise<void> {
    const row = { ...entry, agent: agentOf(entry.sessionKey), estimated: entry.estimated ? 1 : 0, createdAt: entry.at };
    await this.db.run(...insert("model_usage", row, USAGE_FIELDS));
  }

  /** What the budgets compare: tokens since `dayStart` and cost since `monthStart`, overall, for one chat and for one
   * person (their role's `usage`). */
  async spent(sessionKey: string, dayStart: number, monthStart: number, person = "") {
    type Sums = "dayTokens" | "monthCost" | "chatDayTokens" | "chatMonthCost" | "personDayTokens" | "personMonthCost";
    const [spent] = await this.db.rows<Record<Sums, number>>(
      `SELECT coalesce(sum(CASE WHEN created_at >= $2 THEN prompt_tokens + completion_tokens END), 0) AS "dayTokens",
              coalesce(sum(cost), 0) AS "monthCost",
              coalesce(sum(CASE WHEN created_at >= $2 AND session_key = $3 THEN prompt_tokens + completion_tokens END), 0) AS "chatDayTokens",
              coalesce(sum(CASE WHEN session_key = $3 THEN cost END), 0) AS "chatMonthCost",
              coalesce(sum(CASE WHEN created_at >= $2 AND person = $4 THEN prompt_tokens + completion_tokens END), 0) AS "personDayTokens",
              coalesce(sum(CASE WHEN person = $4 THEN cost END), 0) AS "personMonthCost"
         FROM model_usage WHERE created_at >= $1`,
      [monthStart, dayStart, sessionKey, person],
    );
    return spent;
  }

  /** Calls since `monthStart` by kind, model, chat and day; for a chat, only its agent's; for `person`, only theirs. */
  async groups(monthStart: number, dayStart: number, sessionKey?: string, person?: string): Promise<UsageGroup[]> {
    const params: unknown[] = [monthStart, dayStart, sessionKey ?? null];
    const only = (column: string, value: string) => `AND ${column} = $${params.push(value)}`;
    const agent = sessionKey === undefined ? "" : only("agent", agentOf(sessionKey));
    const theirs = person === undefined ? "" : only("person", person);
    const rows = await this.db.rows<Omit<UsageGroup, "here" | "today"> & { here: number; today: number }>(
      `SELECT kind, model, CASE WHEN session_key = $3 THEN 1 ELSE 0 END AS here,
              CASE WHEN created_at >= $2 THEN 1 ELSE 0 END AS today, ${SUMS}
         FROM model_usage WHERE created_at >= $1 ${agent} ${theirs}
        GROUP BY kind, model, here, today ORDER BY kind, model`,
      params,
    );
    return rows.map((r) => ({ ...r, here: Boolean(r.here), today: Boolean(r.today) }));
  }

  /** Tokens and cost per quarter hour since `since` (slot = time / SLOT_MS), for the chart. */
  slots = (since: number) =>
    this.db.rows<{ slot: number; tokens: number; cost: number }>(
      `SELECT created_at / ${SLOT_MS} AS slot, sum(prompt_tokens + completion_tokens) AS tokens, coalesce(sum(cost), 0) AS cost
         FROM model_usage WHERE created_at >= $1 GROUP BY slot ORDER BY slot`,
      [since],
    );

  chats = (since: number, limit = 50) =>
    this.db.rows<UsageSums & { sessionKey: string }>(
      `SELECT session_key AS "sessionKey", ${SUMS} FROM model_usage WHERE created_at >= $1
        GROUP BY session_key ORDER BY sum(prompt_tokens + completion_tokens) DESC, session_key LIMIT $2`,
      [since, limit],
    );
}
