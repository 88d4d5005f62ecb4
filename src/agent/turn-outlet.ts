import { type InboundMessage, type OutboundMessage, replyTarget, routeOf } from "../bus/types.js";
import type { StoredMessage } from "../store/store.js";
import { notice } from "./notices.js";
import { ProgressReporter } from "./progress.js";
import { TurnDrafts } from "./reply-stream.js";
import type { TurnMeter } from "./turn-stats.js";
import type { WorkerDeps } from "./worker-deps.js";

/**
 * The one way out of a turn. While it runs: its progress note, its draft, notices beside it. At its end: its outcome
 * (a reply, a notice or nothing), recorded with the turn and the message's `done` in one transaction, which the
 * channel's outbox sender then delivers (and retries) on its own.
 */
export class TurnOutlet {
  /** `open(msg)` is the turn's `onText` (its reply shown as it is written), where the chat shows drafts. */
  readonly drafts: TurnDrafts;

  constructor(
    private readonly deps: Pick<WorkerDeps, "bus" | "journal" | "turns" | "log" | "config" | "onTurnFinished">,
  ) {
    this.drafts = new TurnDrafts(deps);
  }

  /** Sent now, beside the turn (an attachment that could not be read, the model is away): not its outcome. */
  aside(out: OutboundMessage): void {
    this.deps.bus.publishOutbound(out).catch((err: unknown) => this.deps.log.warn({ err }, "could not send a notice"));
  }

  /** The turn's progress note: shown while a slow round of tool calls runs, cleared when the turn ends. */
  progress(msg: InboundMessage): ProgressReporter {
    const { enabled, afterSeconds } = this.deps.config.progress;
    const target = replyTarget(msg);
    return new ProgressReporter(
      (text) => this.aside({ ...target, kind: "progress", text }),
      enabled ? afterSeconds * 1000 : undefined,
    );
  }

  stopped(msg: InboundMessage): OutboundMessage {
    return this.drafts.stopped(msg) ?? notice(replyTarget(msg), "Stopped.");
  }

  async finish(
    msg: InboundMessage,
    messages: StoredMessage[],
    out?: OutboundMessage,
    meter?: TurnMeter,
  ): Promise<undefined> {
    const { deps } = this;
    out = await this.drafts.settle(msg, out);
    const storing = performance.now();
    const outboxId = await deps.turns.finishTurn(msg, messages, out);
    meter?.stored(performance.now() - storing);
    if (out && outboxId !== undefined) deps.bus.outboundRecorded(routeOf(out));
    deps.onTurnFinished?.(msg);
    return undefined;
  }

  /** Closes messages that waited for the model with `command` (/stop, /new) and one notice; `archive` ends the chat. */
  async setAside(dropped: InboundMessage[], command: InboundMessage, text: string, archive?: string): Promise<void> {
    const { deps } = this;
    const out = notice(replyTarget(command), text);
    await deps.turns.setAside([...dropped, command], out, archive);
    deps.log.info(
      { session: command.sessionKey, count: dropped.length },
      "set aside messages that waited for the model",
    );
    deps.bus.outboundRecorded(routeOf(out));
    for (const msg of [...dropped, command]) deps.onTurnFinished?.(msg);
  }
}
