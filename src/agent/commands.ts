import { type CommandName, commandArgument, helpText, parseCommand, StopRequested } from "../bus/commands.js";
import { type Button, type InboundMessage, replyTarget } from "../bus/types.js";
import { reportText } from "../usage/report.js";
import type { Lane, Lanes } from "./lanes.js";
import { formatDuration, newConversationNotice, notice } from "./notices.js";
import { FORGET_ASK, forgetButtons, peopleAnswer } from "./people-commands.js";
import { runOf } from "./turn-context.js";
import type { TurnOutlet } from "./turn-outlet.js";
import type { WorkerDeps } from "./worker-deps.js";

export const commandOf = (msg: InboundMessage) => (msg.channel === "system" ? undefined : parseCommand(msg.text));

/** The chat commands pincer answers itself (their names and parsing are the bus contract's), at once even while a turn
 * runs: that is the point of /stop and /status. /new waits its turn behind the messages before it (the turn's
 * preflight), but a chat whose message waits for the model starts over at once, that message set aside. */
export class ChatCommands {
  private readonly startedAt = Date.now();

  constructor(
    private readonly deps: WorkerDeps & { consolidate(msg: InboundMessage): void },
    private readonly lanes: Lanes,
    private readonly outlet: TurnOutlet,
  ) {}

  /** Answers `msg` if it is a command answered at once; false for anything that runs as a turn (/new included). */
  take(msg: InboundMessage): boolean {
    const command = commandOf(msg);
    if (command === undefined) return false;
    const { deps } = this;
    const lane = this.lanes.lane(msg.sessionKey);
    if (command === "new") {
      if (lane.pausedUntil === undefined) return false;
      this.setAside(lane, lane.queue.length, msg, newConversationNotice(lane.queue.length), msg.sessionKey)
        .then(() => deps.consolidate(msg))
        .catch((err: unknown) => deps.log.error({ err, session: msg.sessionKey }, "could not start over"));
      return true;
    }
    this.answer(command, msg, lane).catch((err: unknown) =>
      deps.log.error({ err, session: msg.sessionKey, command }, "could not answer a command"),
    );
    return true;
  }

  private async answer(command: Exclude<CommandName, "new">, msg: InboundMessage, lane: Lane): Promise<void> {
    const { deps } = this;
    const { load } = this.lanes;
    const reply = (text: string, buttons?: Button[][]) =>
      this.outlet.finish(msg, [], { ...notice(replyTarget(msg), text), buttons });
    let text = helpText();
    if (command === "stop") {
      const cancelled = deps.helpers.cancel(msg.sessionKey);
      // The message waiting for the model is this chat's running work: /stop sets it aside.
      if (lane.pausedUntil !== undefined) return await this.setAside(lane, 1, msg, stopReply(false, cancelled, true));
      text = stopReply(Boolean(lane.running), cancelled);
      lane.running?.abort(new StopRequested("stopped by /stop"));
    } else if (command === "model") {
      text = await deps.chatModels.answer(msg, commandArgument(msg.text));
    } else if (command === "voice") {
      text = deps.voice ? await deps.voice.answer(msg) : "Spoken replies are not available here.";
    } else if (command === "jobs") {
      text = (await deps.jobsChat?.answer(msg)) ?? "Jobs are not available here.";
    } else if (command === "whoami" || command === "link" || command === "unlink") {
      text = await peopleAnswer(command, msg, deps);
    } else if (command === "forget" && msg.person) {
      return void (await reply(FORGET_ASK, forgetButtons(msg.person)));
    } else if (command === "usage") {
      // The owner sees this chat and all; anyone else (a guest, a member) only what was spent for them.
      const owner = msg.person?.role === "owner";
      const report = owner ? deps.usage.report(msg.sessionKey) : deps.usage.report(undefined, runOf(msg).person ?? "");
      text = reportText(await report);
    } else if (command === "status") {
      const chat = await deps.chatModels.current(msg);
      const { model } = deps.config.openai;
      const here = deps.helpers.list(msg.sessionKey);
      const state = lane.running ? "busy" : lane.pausedUntil !== undefined ? "waiting for the model" : "idle";
      text = [
        `Model: ${chat.chosen ? `${chat.name} (this chat's choice; the default is ${model})` : model}`,
        `Conversation: ${msg.sessionKey}, ${await deps.conversations.count(msg.sessionKey)} stored messages`,
        `This chat: ${state}, ${lane.queue.length} waiting`,
        `All chats: ${load.running} running, ${load.queued} waiting`,
        `Helpers: ${here.length} running here, ${deps.helpers.list().length} in all`,
        ...here.map(
          (h) => `- ${h.id}${h.label ? ` "${h.label}"` : ""}, running for ${formatDuration(Date.now() - h.startedAt)}`,
        ),
        `Up for ${formatDuration(Date.now() - this.startedAt)}`,
        ...deps.statusLines(),
      ].join("\n");
    }
    await reply(text);
  }

  /** Takes `count` messages off a paused lane (the waiting one first) and closes them; then the lane goes on. */
  private async setAside(lane: Lane, count: number, command: InboundMessage, text: string, archive?: string) {
    await this.outlet.setAside(lane.queue.splice(0, count), command, text, archive);
    this.lanes.unpause(lane);
  }
}

function stopReply(runningTurn: boolean, helpersCancelled: number, waitingMessage = false): string {
  const helpers = helpersCancelled > 0 && `${helpersCancelled} background helper${helpersCancelled > 1 ? "s" : ""}`;
  const stopping = [runningTurn && "the running turn", helpers].filter(Boolean);
  const waited = waitingMessage && "Stopped: the message that waited for the model is set aside.";
  const said = [waited, stopping.length > 0 && `Stopping ${stopping.join(" and ")}.`].filter(Boolean);
  return said.length ? said.join(" ") : "Nothing is running.";
}
