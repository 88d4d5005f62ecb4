/** The agent's answers to chat commands; their names and parsing are the bus contract's (src/bus/commands.ts). */

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
