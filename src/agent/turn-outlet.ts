import { LONG_REPLY_CHARS } from "../bus/delivery.js";
import type { DraftStream } from "../bus/draft-stream.js";
import { type InboundMessage, type OutboundMessage, replyTarget, routeOf } from "../bus/types.js";
import { visibleSoFar } from "../llm/collect.js";
import type { StoredMessage } from "../store/store.js";
import { notice } from "./notices.js";
import { ProgressReporter } from "./progress.js";
import type { TurnMeter } from "./turn-stats.js";
import type { WorkerDeps } from "./worker-deps.js";

/** How often a streamed text is looked at (reasoning and markup taken out), whatever its chunks: bounded work per reply. */
const LOOK_EVERY_MS = 100;

interface Draft {
  /** The raw text so far of the model call now streaming, and its visible part as last looked at. */
  raw: string;
  text: string;
  look?: NodeJS.Timeout;
  opening?: Promise<DraftStream | undefined>;
  sink?: DraftStream;
}

/** The one way out of a turn. While it runs: its progress note, its draft, notices beside it. At its end: its outcome
 * (a reply, a notice or nothing), recorded with the turn and the message's `done` in one transaction for the channel's
 * outbox sender. The draft (docs/delivery.md) shows each model call's text as it is written; settle() ends it. */
export class TurnOutlet {
  private readonly drafts = new WeakMap<InboundMessage, Draft>();

  constructor(
    private readonly deps: Pick<WorkerDeps, "bus" | "journal" | "turns" | "log" | "config" | "onTurnFinished">,
  ) {}

  /** Sent now, beside the turn (an attachment that could not be read, the model is away): not its outcome. */
  aside(out: OutboundMessage): void {
    this.deps.bus.publishOutbound(out).catch((err: unknown) => this.deps.log.warn({ err }, "could not send a notice"));
  }

  progress(msg: InboundMessage): ProgressReporter {
    const { enabled, afterSeconds } = this.deps.config.progress;
    return new ProgressReporter(
      (text) => this.aside({ ...replyTarget(msg), kind: "progress", text }),
      enabled ? afterSeconds * 1000 : undefined,
    );
  }

  /** The turn's `onText`; undefined where its reply is not streamed (agent.streamReplies: people's messages only). */
  draft(msg: InboundMessage): ((raw: string) => void) | undefined {
    const setting = this.deps.config.agent.streamReplies;
    if (setting === "off" || msg.channel === "system" || (setting === "private" && msg.isGroup)) return;
    const draft: Draft = { raw: "", text: "" };
    this.drafts.set(msg, draft);
    return (raw) => {
      // A reply this long goes out as a file: its draft stops growing (and the reply deletes it).
      if (raw.length > LONG_REPLY_CHARS) return;
      draft.raw = raw;
      draft.look ??= setTimeout(() => this.look(msg, draft), draft.text ? LOOK_EVERY_MS : 0);
    };
  }

  private look(msg: InboundMessage, draft: Draft): void {
    draft.look = undefined;
    const text = visibleSoFar(draft.raw);
    // Nothing to show yet: a later call keeps the earlier one's words until it has its own.
    if (!text) return;
    draft.text = text;
    if (draft.sink) draft.sink.update(text);
    else draft.opening ??= this.start(msg, draft).catch(() => undefined);
  }

  /** A stopped turn's reply: the words so far with a note, in the draft's place; "Stopped." when none were shown. */
  stopped(msg: InboundMessage): OutboundMessage {
    const draft = this.drafts.get(msg);
    const text = draft?.text && (visibleSoFar(draft.raw) || draft.text);
    if (!text) return notice(replyTarget(msg), "Stopped.");
    return { ...replyTarget(msg), kind: "reply", text: `${text}\n\n_(stopped)_`, replyToId: msg.id };
  }

  async finish(
    msg: InboundMessage,
    messages: StoredMessage[],
    out?: OutboundMessage,
    meter?: TurnMeter,
  ): Promise<undefined> {
    const { deps } = this;
    out = await this.settle(msg, out);
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

  /** Ends the turn's draft before its outcome is recorded: the outbound message that settles it. */
  private async settle(msg: InboundMessage, out: OutboundMessage | undefined): Promise<OutboundMessage | undefined> {
    const draft = this.drafts.get(msg);
    this.drafts.delete(msg);
    if (!draft) return out;
    clearTimeout(draft.look);
    // A turn over before its draft opened may still have one from before a crash: that one is settled.
    const sink = (await draft.opening) ?? (await this.opened(msg, true));
    if (!sink) return out;
    // No reply (the message tool answered, nothing to say) or a notice (an error): the words so far are no answer, and
    // left above the apology they would read like one.
    if (out?.kind !== "reply") {
      await sink.discard();
      return out;
    }
    const draftIds = await sink.close();
    return draftIds.length > 0 ? { ...out, draftIds } : out;
  }

  private async start(msg: InboundMessage, draft: Draft): Promise<DraftStream | undefined> {
    const sink = await this.opened(msg);
    if (!sink) this.deps.log.debug({ session: msg.sessionKey }, "this chat's channel shows no drafts here");
    sink?.update(draft.text);
    draft.sink = sink;
    return sink;
  }

  /** The message's draft, going on in the messages it had before a crash; `stored`: only a draft it had. */
  private async opened(msg: InboundMessage, stored = false): Promise<DraftStream | undefined> {
    const { bus, journal } = this.deps;
    const messageIds = await journal.draftOf(msg).catch(() => []);
    if (stored && messageIds.length === 0) return undefined;
    const key = `${msg.sessionKey}:${msg.id}`;
    const target = { ...replyTarget(msg), replyToId: msg.id, isPrivate: !msg.isGroup, key, messageIds };
    return bus.openDraft(target, (ids) => journal.recordDraft(msg, ids));
  }
}
