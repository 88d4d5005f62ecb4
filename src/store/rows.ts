import type { OutboxRow } from "../bus/delivery.js";
import type { ChannelName, InboundMessage } from "../bus/types.js";
import type { Schedule } from "../scheduler/schedule.js";
import type { CronJob, HelperRun, HelperStatus, StoredMessage, TurnSoFar } from "./types.js";

/** Rows both engines store alike (the same columns), and how they read back. */

/** Platform message ids are only unique per chat (Telegram) or per channel. */
export function inboxId(msg: Pick<InboundMessage, "channel" | "chatId" | "id">): string {
  return `${msg.channel}:${msg.chatId}:${msg.id}`;
}

export interface JobRow {
  id: string;
  name: string | null;
  message: string;
  kind: Schedule["kind"];
  at_ms: number | null;
  every_seconds: number | null;
  anchor_ms: number | null;
  cron_expr: string | null;
  tz: string;
  channel: ChannelName;
  chat_id: string;
  thread_id: string | null;
  session_key: string;
  is_group: number;
  created_at: number;
  next_run_at: number;
  last_run_at: number | null;
  last_delivery_id: string | null;
  owner_channel: ChannelName | null;
  owner_id: string | null;
  paused_at: number | null;
}

export function toJob(row: JobRow): CronJob {
  return {
    id: row.id,
    name: row.name ?? undefined,
    message: row.message,
    schedule: toSchedule(row),
    tz: row.tz,
    origin: {
      channel: row.channel,
      chatId: row.chat_id,
      threadId: row.thread_id ?? undefined,
      sessionKey: row.session_key,
      isGroup: row.is_group === 1,
    },
    owner: row.owner_channel && row.owner_id ? { channel: row.owner_channel, userId: row.owner_id } : undefined,
    pausedAt: row.paused_at ?? undefined,
    createdAt: row.created_at,
    nextRunAt: row.next_run_at,
    lastRunAt: row.last_run_at ?? undefined,
    lastDeliveryId: row.last_delivery_id ?? undefined,
  };
}

function toSchedule(row: JobRow): Schedule {
  switch (row.kind) {
    case "at":
      return { kind: "at", at: row.at_ms as number };
    case "every":
      return { kind: "every", everySeconds: row.every_seconds as number, anchor: row.anchor_ms as number };
    case "cron":
      return { kind: "cron", expr: row.cron_expr as string, tz: row.tz };
  }
}

export interface HelperRunRow {
  id: string;
  session_key: string;
  label: string | null;
  task: string;
  model: string;
  status: HelperStatus;
  origin: string;
  started_at: number;
  finished_at: number | null;
  result: string | null;
}

export function toRun(row: HelperRunRow): HelperRun {
  return {
    id: row.id,
    sessionKey: row.session_key,
    label: row.label ?? undefined,
    task: row.task,
    model: row.model,
    status: row.status,
    origin: JSON.parse(row.origin) as InboundMessage,
    startedAt: row.started_at,
    finishedAt: row.finished_at ?? undefined,
    result: row.result ?? undefined,
  };
}

/** A turn's journal rows, oldest first, as what the turn had done. */
export function turnSoFar(rows: Array<{ kind: string; call_id: string | null; payload: string | null }>): TurnSoFar {
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

export interface OutboxRecord {
  id: number;
  payload: string;
  parts_sent: number;
  attempts: number;
  created_at: number;
  next_attempt_at: number;
}

export function toOutboxRow(row: OutboxRecord): OutboxRow {
  return {
    id: row.id,
    msg: JSON.parse(row.payload) as OutboxRow["msg"],
    partsSent: row.parts_sent,
    attempts: row.attempts,
    createdAt: row.created_at,
    nextAttemptAt: row.next_attempt_at,
  };
}
