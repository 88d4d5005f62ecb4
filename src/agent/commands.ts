import { type CommandName, commandArgument, helpText } from "../bus/commands.js";
import type { InboundMessage } from "../bus/types.js";
import { reportText } from "../usage/report.js";
import type { WorkerDeps } from "./worker-deps.js";

/** The agent's answers to chat commands; their names and parsing are the bus contract's (src/bus/commands.ts). */

/** What the worker's answers to /stop, /status and /help need of it and of the chat's lane. */
export interface CommandContext {
  deps: WorkerDeps;
  lane: { running?: AbortController; pausedUntil?: number; queue: unknown[] };
  load: { running: number; queued: number };
  upForMs: number;
  /** Sets the message waiting for the model aside with this notice (the lane goes on). */
  setAsideWaiting(text: string): Promise<void>;
  reply(text: string): Promise<unknown>;
}

/** Why a turn was aborted by /stop (not a shutdown, after which it resumes). */
export class StopRequested extends Error {
  constructor() {
    super("stopped by /stop");
  }
}

/** Answers a command other than /new (that one runs in its turn) for the chat of `msg`. */
export async function answerCommand(
  command: Exclude<CommandName, "new">,
  msg: InboundMessage,
  { deps, lane, load, upForMs, setAsideWaiting, reply }: CommandContext,
): Promise<void> {
  let text = helpText();
  if (command === "stop") {
    const cancelled = deps.helpers?.cancel(msg.sessionKey) ?? 0;
    // The message waiting for the model is this chat's running work: /stop sets it aside.
    if (lane.pausedUntil !== undefined) return await setAsideWaiting(stopReply(false, cancelled, true));
    text = stopReply(Boolean(lane.running), cancelled);
    lane.running?.abort(new StopRequested());
  } else if (command === "model") {
    text = deps.chatModels
      ? await deps.chatModels.answer(msg, commandArgument(msg.text))
      : `Model: ${deps.settings.model}`;
  } else if (command === "usage") {
    text = deps.usage ? reportText(await deps.usage.report(msg.sessionKey)) : "Model calls are not counted here.";
  } else if (command === "status") {
    const chat = await deps.chatModels?.current(msg);
    text = statusReply({
      model: chat?.chosen
        ? `${chat.name} (this chat's choice; the default is ${deps.settings.model})`
        : deps.settings.model,
      sessionKey: msg.sessionKey,
      storedMessages: await deps.conversations.count(msg.sessionKey),
      busy: Boolean(lane.running),
      waitingForModel: lane.pausedUntil !== undefined,
      waiting: lane.queue.length,
      load,
      helpers: deps.helpers && { here: deps.helpers.list(msg.sessionKey), all: deps.helpers.list().length },
      upForMs,
      extra: deps.statusLines?.() ?? [],
    });
  }
  await reply(text);
}

/** The answer to `/stop`: what it stops (a message waiting for the model is set aside at once). */
export function stopReply(runningTurn: boolean, helpersCancelled: number, waitingMessage = false): string {
  const stopping = [
    ...(runningTurn ? ["the running turn"] : []),
    ...(helpersCancelled > 0 ? [`${helpersCancelled} background helper${helpersCancelled > 1 ? "s" : ""}`] : []),
  ];
  const said = [
    ...(waitingMessage ? ["Stopped: the message that waited for the model is set aside."] : []),
    ...(stopping.length ? [`Stopping ${stopping.join(" and ")}.`] : []),
  ];
  return said.length ? said.join(" ") : "Nothing is running.";
}

export interface StatusFacts {
  model: string;
  sessionKey: string;
  storedMessages: number;
  busy: boolean;
  /** The chat's first message waits for the model to come back. */
  waitingForModel?: boolean;
  waiting: number;
  load: { running: number; queued: number };
  /** Absent when helpers are off. */
  helpers?: { here: Array<{ id: string; label?: string; startedAt: number }>; all: number };
  upForMs: number;
  /** More lines (the MCP servers' state). */
  extra: string[];
}

/** The answer to `/status`. */
export function statusReply(facts: StatusFacts): string {
  const { helpers } = facts;
  return [
    `Model: ${facts.model}`,
    `Conversation: ${facts.sessionKey}, ${facts.storedMessages} stored messages`,
    `This chat: ${facts.busy ? "busy" : facts.waitingForModel ? "waiting for the model" : "idle"}, ${facts.waiting} waiting`,
    `All chats: ${facts.load.running} running, ${facts.load.queued} waiting`,
    ...(helpers ? [`Helpers: ${helpers.here.length} running here, ${helpers.all} in all`] : []),
    ...(helpers?.here ?? []).map(
      (h) => `- ${h.id}${h.label ? ` "${h.label}"` : ""}, running for ${formatDuration(Date.now() - h.startedAt)}`,
    ),
    `Up for ${formatDuration(facts.upForMs)}`,
    ...facts.extra,
  ].join("\n");
}

function formatDuration(ms: number): string {
  const minutes = Math.floor(ms / 60_000);
  return minutes < 60 ? `${minutes} min` : `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}
