import { isOwnersChat, type MemorySharing, seesOwnerMemory } from "../access/policy.js";
import { parseCommand } from "../bus/commands.js";
import { type InboundMessage, type OutboundMessage, replyTarget, silentReplyOf } from "../bus/types.js";
import { type ChatMessage, ModelError } from "../llm/model.js";
import { ModelUnavailableError } from "../llm/resilient.js";
import { FencedOutError } from "../store/cluster.js";
import type { StoredMessage } from "../store/store.js";
import { untilAborted } from "../tools/tool.js";
import { type ContentPart, mediaKind } from "./attachments.js";
import { BudgetError } from "./budget.js";
import { answerCommand } from "./commands.js";
import { toChatMessage, userContent, withTurnFacts } from "./context.js";
import { auditTo, runAgentLoop } from "./loop.js";
import { ModelWaits } from "./model-wait.js";
import { failure, isSilentReply, modelFailure, newConversationNotice, notice, POISON_NOTICE } from "./notices.js";
import { ProgressReporter } from "./progress.js";
import { TurnDrafts } from "./reply-stream.js";
import { registryFor } from "./scheduled-tools.js";
import { tooSmallFor } from "./too-small.js";
import { buildTurnContext, runOf } from "./turn-context.js";
import { TurnMeter, type TurnReport } from "./turn-stats.js";
import type { WorkerDeps } from "./worker-deps.js";

/** One conversation's queue: its messages run strictly one after another. */
interface Lane {
  key: string;
  queue: InboundMessage[];
  running?: AbortController;
  /** Set while the lane's first message waits for the model; `resume` runs it again. */
  pausedUntil?: number;
  resume?: NodeJS.Timeout;
}

/** Turns of one message that may be cut off by a crash before it is set aside. */
const MAX_TURN_STARTS = 2;

/** Why a turn was cut short when its conversation moved to another process of the cluster. */
class ConversationMovedError extends Error {}

/** Runs turns, per conversation in order and across them in parallel up to `maxConcurrentTurns`; none is dropped. */
export class AgentWorker {
  private readonly lanes = new Map<string, Lane>();
  /** Lanes with work that wait for a free slot under the global cap, in arrival order. */
  private readonly waiting: Lane[] = [];
  private readonly turns = new Set<Promise<void>>();
  private readonly shutdown = new AbortController();
  private active = 0;
  private readonly startedAt = Date.now();
  private readonly modelWaits: ModelWaits;
  private readonly drafts: TurnDrafts;
  /** Who shares the owner's MEMORY.md: the allowlists and config memory.shareWith*. */
  private readonly sharing: MemorySharing;

  constructor(private readonly deps: WorkerDeps) {
    this.modelWaits = new ModelWaits(deps, (msg, out) => this.finish(msg, [], out));
    this.drafts = new TurnDrafts(deps);
    const { telegramAllowFrom, discordAllowFrom, memory } = deps.config;
    this.sharing = { ...memory, allowFrom: { telegram: telegramAllowFrom, discord: discordAllowFrom } };
  }

  async run(): Promise<void> {
    for await (const msg of this.deps.bus.inbound) {
      // One bad message must not end the loop that serves every chat.
      try {
        this.accept(msg);
      } catch (err) {
        this.deps.log.error({ err, session: msg.sessionKey }, "could not accept a message");
      }
      // A burst: let the turn just started send its model request before the next one spends the thread on its prompt.
      if (this.deps.bus.inbound.size > 0) await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  /** Cancels running turns (their messages stay pending in the inbox and run after a restart). */
  async stop(): Promise<void> {
    this.shutdown.abort(new Error("pincer is shutting down"));
    // A turn's one signal carries both /stop and the shutdown (cheaper than combining two per turn).
    for (const lane of this.lanes.values()) lane.running?.abort(this.shutdown.signal.reason);
    for (const lane of this.lanes.values()) clearTimeout(lane.resume);
    await Promise.allSettled([...this.turns]);
  }

  /** Clustered, the turn lease went elsewhere: abort the turn unwritten, drop the queue (it stays in the shared inbox). */
  drop(sessionKey: string): void {
    const lane = this.lanes.get(sessionKey);
    if (!lane) return;
    lane.queue.length = 0;
    lane.running?.abort(new ConversationMovedError(`the conversation ${sessionKey} moved to another process`));
  }

  /** Turns running now, and messages waiting behind them. */
  get load(): { running: number; queued: number } {
    const queued = [...this.lanes.values()].reduce((sum, lane) => sum + lane.queue.length, 0);
    return { running: this.active, queued };
  }

  get runningSessions(): string[] {
    return [...this.lanes.values()].filter((lane) => lane.running).map((lane) => lane.key);
  }

  private accept(msg: InboundMessage): void {
    const lane = this.lane(msg.sessionKey);
    const command = msg.channel === "system" ? undefined : parseCommand(msg.text);
    // Answered at once, even while a turn runs: that is the point of /stop and /status.
    if (command !== undefined && command !== "new") {
      answerCommand(command, msg, {
        deps: this.deps,
        lane,
        load: this.load,
        upForMs: Date.now() - this.startedAt,
        setAsideWaiting: (text) => this.setAside(lane, 1, msg, text),
        reply: (text) => this.finish(msg, [], notice(replyTarget(msg), text)),
      }).catch((err: unknown) =>
        this.deps.log.error({ err, session: msg.sessionKey, command }, "could not answer a command"),
      );
      return;
    }
    // A chat whose message waits for the model starts over at once, not behind that message.
    if (command === "new" && lane.pausedUntil !== undefined) this.startOver(lane, msg);
    else {
      lane.queue.push(msg);
      this.schedule(lane);
    }
  }

  private lane(key: string): Lane {
    const lane = this.lanes.get(key) ?? { key, queue: [] };
    this.lanes.set(key, lane);
    return lane;
  }

  private schedule(lane: Lane): void {
    if (lane.running || lane.queue.length === 0 || lane.pausedUntil !== undefined) return;
    if (this.active >= this.deps.config.agent.maxConcurrentTurns) {
      if (!this.waiting.includes(lane)) this.waiting.push(lane);
      return;
    }
    const msg = lane.queue.shift()!;
    const controller = new AbortController();
    if (this.shutdown.signal.aborted) controller.abort(this.shutdown.signal.reason);
    lane.running = controller;
    this.active++;
    const turn = this.runTurn(msg, controller.signal)
      .then((retryAt) => {
        if (retryAt !== undefined && !this.shutdown.signal.aborted) this.pause(lane, msg, retryAt);
      })
      // runTurn answers every failure itself; this catches a failure of that answer (the database).
      .catch((err: unknown) => this.deps.log.error({ err, session: msg.sessionKey }, "could not finish a turn"))
      .finally(() => {
        lane.running = undefined;
        this.active--;
        this.turns.delete(turn);
        if (this.shutdown.signal.aborted) return;
        this.schedule(lane);
        while (this.active < this.deps.config.agent.maxConcurrentTurns && this.waiting.length > 0) {
          this.schedule(this.waiting.shift()!);
        }
        if (!lane.running && lane.queue.length === 0) this.lanes.delete(lane.key);
      });
    this.turns.add(turn);
  }

  /** Puts the message back at the head of its lane, which waits until the model is worth asking again. */
  private pause(lane: Lane, msg: InboundMessage, retryAt: number): void {
    lane.queue.unshift(msg);
    lane.pausedUntil = retryAt;
    lane.resume = setTimeout(() => this.unpause(lane), Math.max(0, retryAt - Date.now()));
  }

  private unpause(lane: Lane): void {
    clearTimeout(lane.resume);
    lane.pausedUntil = lane.resume = undefined;
    this.schedule(lane);
    if (!lane.running && lane.queue.length === 0) this.lanes.delete(lane.key);
  }

  /** Sets aside `count` messages of a paused lane (the waiting one first) with `command`; the lane goes on. */
  private async setAside(lane: Lane, count: number, command: InboundMessage, text: string, archive?: string) {
    await this.modelWaits.setAside(lane.queue.splice(0, count), command, text, archive);
    this.unpause(lane);
  }

  private startOver(lane: Lane, msg: InboundMessage): void {
    this.setAside(lane, lane.queue.length, msg, newConversationNotice(lane.queue.length), msg.sessionKey)
      .then(() => this.consolidate(msg))
      .catch((err: unknown) => this.deps.log.error({ err, session: msg.sessionKey }, "could not start over"));
  }

  private consolidate(msg: InboundMessage): void {
    this.deps.consolidator?.afterTurn(msg.sessionKey, isOwnersChat(msg, this.sharing.allowFrom));
  }

  /** Runs one message's turn (`signal`: /stop and the shutdown); returns when to run it again if the model was away. */
  private async runTurn(msg: InboundMessage, signal: AbortSignal): Promise<number | undefined> {
    const { deps } = this;
    const startedAt = Date.now();
    const target = replyTarget(msg);
    const activity = { ...target, sessionKey: msg.sessionKey };
    deps.bus.publishActivity({ ...activity, busy: true });
    const stamp = (content: string) => withTurnFacts(content, deps.now?.() ?? new Date(), deps.config.timezone);
    let user: StoredMessage = { role: "user", content: stamp(userContent(msg)), createdAt: msg.receivedAt };
    let images: ContentPart[] = [];
    const sentToConversation: string[] = [];
    const publishProgress = (text: string) => void deps.bus.publishOutbound({ ...target, kind: "progress", text });
    const { agent, progress: notes } = deps.config;
    const progress = new ProgressReporter(publishProgress, notes.enabled ? notes.afterSeconds * 1000 : undefined);
    const chosen = await deps.chatModels.forTurn(msg);
    const meter = new TurnMeter(deps.usage.wrap(chosen.model, runOf(msg)), deps.observer, msg.receivedAt);
    let outcome: TurnReport["outcome"] = "ok";
    // Finished rounds of the turn: stored even when the turn then fails.
    const produced: StoredMessage[] = [];
    try {
      if (!(await deps.senderHasAccess(msg))) {
        const dropped = { session: msg.sessionKey, userId: msg.senderId };
        deps.log.info(dropped, "dropping a queued message: its sender lost access");
        return await this.finish(msg, [], undefined);
      }
      // A message whose turn was cut off twice (the daemon died during it) is not run a third time.
      const starts = await deps.journal.recordTurnStart(msg);
      if (starts > MAX_TURN_STARTS) {
        deps.log.warn(
          { session: msg.sessionKey, id: msg.id, starts: starts - 1 },
          "dropping a message that crashed pincer",
        );
        return await this.finish(msg, [], notice(target, POISON_NOTICE));
      }
      if (msg.channel !== "system" && parseCommand(msg.text) === "new") {
        await deps.conversations.archive(msg.sessionKey);
        return await this.finish(msg, [], notice(target, newConversationNotice(0)));
      }
      if (msg.media.length > 0) {
        const prepared = await deps.attachments(msg.media, signal);
        user = { ...user, content: stamp(userContent(msg, prepared.lines)) };
        images = prepared.images;
        if (prepared.problems.length > 0) {
          const problem = failure(target, prepared.problems.join(" "));
          // Nothing left to answer (a voice note alone that could not be heard): the sentence is the answer.
          if (!msg.text.trim() && msg.media.every((path) => mediaKind(path) === "audio")) {
            return await this.finish(msg, [user], problem);
          }
          deps.bus.publishOutbound(problem).catch((err: unknown) => deps.log.warn({ err }, "could not send a notice"));
        }
      }
      const registry = registryFor(msg, deps.registry, deps.config.cron.tools);
      // MCP servers' first connection attempts and the endpoint's context, bounded, once after a start.
      await untilAborted(deps.ready(), signal);
      const userMessage: ChatMessage =
        images.length > 0
          ? { role: "user", content: [{ type: "text", text: user.content ?? "" }, ...images] }
          : toChatMessage(user);
      const { window } = chosen;
      const ownerMemory = seesOwnerMemory(msg, this.sharing);
      const turnDeps = { ...deps, ownerMemory, contextTokens: window(), toolSchemas: () => registry.toSchemas() };
      const context = await buildTurnContext(turnDeps, msg, userMessage);
      meter.contextBuilt();
      const audited = auditTo(deps.audit, msg.sessionKey, deps.log);
      const result = await runAgentLoop(
        {
          ...deps,
          model: meter.model,
          registry,
          maxIterations: agent.maxIterations,
          onToolRound: (calls) => progress.roundStarted(calls),
          onText: this.drafts.open(msg),
          window,
          recheckWindow: chosen.recheck,
          onToolResult: (call, text, durationMs) => {
            meter.tool(call.name, text);
            audited(call, text, durationMs);
          },
        },
        {
          ...context,
          produced,
          toolContext: {
            sessionKey: msg.sessionKey,
            inbound: msg,
            workspace: deps.config.workspace,
            seesOwnerMemory: ownerMemory,
            signal,
            bus: deps.bus,
            log: deps.log.child({ session: msg.sessionKey }),
            sentToConversation,
          },
          resume: await deps.steps.load(msg),
        },
      );
      this.modelWaits.answered();
      // An answer already sent with the message tool is not sent a second time, and a run that
      // may stay silent (the heartbeat) sends nothing when the model answers with its token.
      const text = result.reply.trim();
      const replyToId = msg.channel === "system" ? undefined : msg.id;
      const silent = !text || sentToConversation.includes(text) || isSilentReply(text, silentReplyOf(msg));
      const reply: OutboundMessage = { ...target, kind: "reply", text: result.reply, replyToId };
      // Spoken too when the chat wants it: bounded, and on any failure the text goes alone.
      const spoken = silent || !deps.voice ? reply : await deps.voice.dress(msg, reply, signal);
      await this.finish(msg, [user, ...result.produced], silent ? undefined : spoken, meter);
    } catch (err) {
      outcome = signal.aborted || this.shutdown.signal.aborted ? "stopped" : "error";
      // Shutting down: leave the message pending in the inbox so it runs again after the restart;
      // an orderly stop is no crash, so this start does not count against the message.
      if (this.shutdown.signal.aborted) {
        await deps.journal.forgetTurnStart(msg);
        return;
      }
      // Another process runs the conversation now and resumes this turn from its journal.
      if (signal.reason instanceof ConversationMovedError) return;
      // Another process answered the message meanwhile (this one was paused): nothing to add.
      if (err instanceof FencedOutError) return void deps.onTurnFinished?.(msg);
      const fail = (out: OutboundMessage | undefined) => this.finish(msg, [user, ...produced], out);
      const stopped = signal.aborted && (this.drafts.stopped(msg) ?? notice(target, "Stopped."));
      if (stopped) return await fail(stopped);
      // Nothing happened yet (no tool ran): the message can wait for the model and run again.
      if (err instanceof ModelUnavailableError && deps.waitForModel && meter.toolCalls === 0) {
        return await this.modelWaits.unavailable(msg, err, startedAt);
      }
      if (err instanceof ModelError) {
        outcome = "model_error";
        deps.log.warn({ session: msg.sessionKey, err: err.message }, "model call failed");
        return await fail(modelFailure(target, err));
      }
      if (err instanceof BudgetError) {
        deps.log.warn({ session: msg.sessionKey, needed: err.needed, budget: err.budget }, "the prompt does not fit");
        return await fail(failure(target, tooSmallFor(err, { ...deps, window: chosen.window })));
      }
      deps.log.error({ err, session: msg.sessionKey }, "turn failed");
      await fail(failure(target, "Sorry, something went wrong on my side. Please try again."));
    } finally {
      progress.finish();
      // One line per turn for log search: sizes and times only, never message text.
      deps.log.info(meter.finish(msg.sessionKey, outcome), "turn finished");
      deps.bus.publishActivity({ ...activity, busy: false });
      // After the reply went out: consolidation never delays it.
      if (!this.shutdown.signal.aborted) this.consolidate(msg);
    }
  }

  /** Stores the turn, marks the message done and records the reply in one transaction. */
  private async finish(
    msg: InboundMessage,
    messages: StoredMessage[],
    out: OutboundMessage | undefined,
    meter?: TurnMeter,
  ): Promise<undefined> {
    const { deps } = this;
    out = await this.drafts.settle(msg, out);
    const storing = performance.now();
    const outboxId = await deps.turns.finishTurn(msg, messages, out);
    meter?.stored(performance.now() - storing);
    // The turn ends here: the channel's sender delivers the reply (and retries it) on its own.
    if (out && outboxId !== undefined) deps.bus.outboundRecorded(out.channel);
    deps.onTurnFinished?.(msg);
    return undefined;
  }
}
