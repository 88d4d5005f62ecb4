import type { Logger } from "pino";
import type { MessageBus } from "../bus/bus.js";
import { type InboundMessage, type OutboundMessage, replyTarget } from "../bus/types.js";
import { type ChatMessage, type Model, ModelError } from "../llm/model.js";
import { ModelUnavailableError } from "../llm/resilient.js";
import type { TokenCounter } from "../llm/tokens.js";
import type { Consolidator } from "../memory/consolidator.js";
import { isScheduledRun } from "../scheduler/delivery.js";
import type { AuditLog } from "../store/audit.js";
import type { ConversationStore, StoredMessage } from "../store/conversations.js";
import type { SqliteJournal } from "../store/journal.js";
import type { MemoryStore } from "../store/memory.js";
import type { TurnSteps } from "../store/turn-steps.js";
import type { TurnStore } from "../store/turns.js";
import type { ToolRegistry } from "../tools/registry.js";
import { type ContentPart, mediaKind, type PreparedAttachments } from "./attachments.js";
import { helpText, parseCommand } from "./commands.js";
import { toChatMessage, userContent } from "./context.js";
import { runAgentLoop } from "./loop.js";
import { ProgressReporter } from "./progress.js";
import { scheduledRunOffers, withheldInScheduledRun } from "./scheduled-tools.js";
import type { Skill } from "./skills.js";
import { buildTurnContext } from "./turn-context.js";
import { TurnMeter, type TurnObserver, type TurnReport } from "./turn-stats.js";

export interface WorkerDeps {
  bus: MessageBus;
  journal: SqliteJournal;
  conversations: ConversationStore;
  turns: TurnStore;
  audit: AuditLog;
  /** The turn's journal: a turn cut short by a crash resumes instead of repeating finished tool calls. */
  steps?: TurnSteps;
  model: Model;
  registry: ToolRegistry;
  log: Logger;
  memory: MemoryStore;
  tokens: TokenCounter;
  /** Summarises old turns after a turn, in the background; absent when switched off. */
  consolidator?: Consolidator;
  settings: {
    model: string;
    workspace: string;
    timezone: string;
    maxIterations: number;
    maxConcurrentTurns: number;
    contextTokens: number;
    /** Show a progress note when a tool round runs longer than this; off when absent. */
    progressAfterMs?: number;
    /** Config cron.tools: what a scheduled run may use (absent: every tool but cron and spawn). */
    cronTools?: readonly string[];
    memoryPromptChars: number;
    shareMemoryWithGroups: boolean;
  };
  skills: () => Skill[];
  /** Background helpers, for /status and /stop. */
  helpers?: {
    list(sessionKey?: string): Array<{ id: string; label?: string; startedAt: number }>;
    cancel(sessionKey: string): number;
  };
  /** Reads a message's attachments for the model (images, voice notes, documents); paths only when absent. */
  attachments?: (paths: string[], signal: AbortSignal) => Promise<PreparedAttachments>;
  now?: () => Date;
  /** More lines for `/status` (the MCP servers' state). */
  statusLines?: () => string[];
  /**
   * While the model is unavailable (every endpoint down or its circuit open), a message waits in
   * its queue and runs again later instead of failing; each chat is told once. Off for one-shot
   * commands that must end.
   */
  waitForModel?: boolean;
  /** Whether the sender may still talk to pincer (the access gate): a message queued before a revoke is not run. */
  senderHasAccess?: (msg: InboundMessage) => boolean;
  /** Called once a message's turn is over and its reply is in the outbox. */
  onTurnFinished?: (msg: InboundMessage) => void;
  /** Told about model calls, tool calls and finished turns (metrics). */
  observer?: TurnObserver;
}

/** One conversation's queue: its messages run strictly one after another. */
interface Lane {
  key: string;
  queue: InboundMessage[];
  running?: AbortController;
  /** Set while the lane waits for the model to come back; a timer resumes it. */
  pausedUntil?: number;
}

/**
 * Runs turns: per conversation strictly in order, across conversations in parallel up to
 * `maxConcurrentTurns`. Messages that arrive during a turn wait in their lane; none is dropped.
 */
export class AgentWorker {
  private readonly lanes = new Map<string, Lane>();
  /** Lanes with work that wait for a free slot under the global cap, in arrival order. */
  private readonly waiting: Lane[] = [];
  private readonly turns = new Set<Promise<void>>();
  private readonly shutdown = new AbortController();
  private active = 0;
  private readonly startedAt = Date.now();
  /** Chats already told during the current model outage (cleared by the first turn that works). */
  private readonly toldAboutOutage = new Set<string>();
  private readonly resumeTimers = new Set<NodeJS.Timeout>();

  constructor(private readonly deps: WorkerDeps) {}

  /** Consumes the bus until it closes. */
  async run(): Promise<void> {
    for await (const msg of this.deps.bus.inbound) {
      // One bad message must not end the loop that serves every chat.
      try {
        this.accept(msg);
      } catch (err) {
        this.deps.log.error({ err, session: msg.sessionKey }, "could not accept a message");
      }
    }
  }

  /** Cancels running turns (their messages stay pending in the inbox and run after a restart). */
  async stop(): Promise<void> {
    this.shutdown.abort(new Error("pincer is shutting down"));
    for (const timer of this.resumeTimers) clearTimeout(timer);
    await Promise.allSettled([...this.turns]);
  }

  /** Turns running now, and messages waiting behind them. */
  get load(): { running: number; queued: number } {
    let queued = 0;
    for (const lane of this.lanes.values()) queued += lane.queue.length;
    return { running: this.active, queued };
  }

  /** The conversations with a turn running now. */
  get runningSessions(): string[] {
    return [...this.lanes.values()].filter((lane) => lane.running).map((lane) => lane.key);
  }

  private accept(msg: InboundMessage): void {
    const lane = this.lane(msg.sessionKey);
    const command = msg.channel === "system" ? undefined : parseCommand(msg.text);
    // Answered at once, even while a turn runs: that is the point of /stop and /status.
    if (command === "stop" || command === "status" || command === "help") {
      this.answerCommand(command, lane, msg).catch((err: unknown) =>
        this.deps.log.error({ err, session: msg.sessionKey, command }, "could not answer a command"),
      );
      return;
    }
    lane.queue.push(msg);
    this.schedule(lane);
  }

  private lane(key: string): Lane {
    let lane = this.lanes.get(key);
    if (!lane) {
      lane = { key, queue: [] };
      this.lanes.set(key, lane);
    }
    return lane;
  }

  private schedule(lane: Lane): void {
    if (lane.running || lane.queue.length === 0 || lane.pausedUntil !== undefined) return;
    if (this.active >= this.deps.settings.maxConcurrentTurns) {
      if (!this.waiting.includes(lane)) this.waiting.push(lane);
      return;
    }
    const msg = lane.queue.shift() as InboundMessage;
    const controller = new AbortController();
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
        while (this.active < this.deps.settings.maxConcurrentTurns && this.waiting.length > 0) {
          this.schedule(this.waiting.shift() as Lane);
        }
        if (!lane.running && lane.queue.length === 0) this.lanes.delete(lane.key);
      });
    this.turns.add(turn);
  }

  /** Puts the message back at the head of its lane, which waits until the model is worth asking again. */
  private pause(lane: Lane, msg: InboundMessage, retryAt: number): void {
    lane.queue.unshift(msg);
    lane.pausedUntil = retryAt;
    const timer = setTimeout(
      () => {
        this.resumeTimers.delete(timer);
        lane.pausedUntil = undefined;
        this.schedule(lane);
      },
      Math.max(0, retryAt - Date.now()),
    );
    this.resumeTimers.add(timer);
  }

  /** Runs one message's turn; returns a time to run it again when the model was unavailable. */
  private async runTurn(msg: InboundMessage, stopSignal: AbortSignal): Promise<number | undefined> {
    const { deps } = this;
    const target = replyTarget(msg);
    const activity = { ...target, sessionKey: msg.sessionKey };
    deps.bus.publishActivity({ ...activity, busy: true });
    const signal = AbortSignal.any([stopSignal, this.shutdown.signal]);
    let user: StoredMessage = { role: "user", content: userContent(msg), createdAt: msg.receivedAt };
    let images: ContentPart[] = [];
    const sentToConversation: string[] = [];
    const afterMs = deps.settings.progressAfterMs;
    const progress =
      afterMs === undefined
        ? undefined
        : new ProgressReporter((text) => void deps.bus.publishOutbound({ ...target, kind: "progress", text }), afterMs);
    let toolsRan = 0;
    const meter = new TurnMeter(deps.model, deps.observer);
    let outcome: TurnReport["outcome"] = "ok";
    // Finished rounds of the turn: stored even when the turn then fails.
    const produced: StoredMessage[] = [];
    try {
      if (deps.senderHasAccess && !deps.senderHasAccess(msg)) {
        deps.log.info(
          { session: msg.sessionKey, userId: msg.senderId },
          "dropping a queued message: its sender lost access",
        );
        return await this.finish(msg, [], undefined);
      }
      // A message whose turn was cut off twice (the daemon died during it) is not run a third time.
      const starts = deps.journal.recordTurnStart(msg);
      if (starts > MAX_TURN_STARTS) {
        deps.log.warn(
          { session: msg.sessionKey, id: msg.id, starts: starts - 1 },
          "dropping a message that crashed pincer",
        );
        return await this.finish(msg, [], notice(target, POISON_NOTICE));
      }
      if (msg.channel !== "system" && parseCommand(msg.text) === "new") {
        deps.conversations.archive(msg.sessionKey);
        return await this.finish(msg, [], notice(target, "Started a new conversation. Long-term memory is kept."));
      }
      if (msg.media.length > 0 && deps.attachments) {
        const prepared = await deps.attachments(msg.media, signal);
        user = { ...user, content: userContent(msg, prepared.lines) };
        images = prepared.images;
        if (prepared.problems.length > 0) {
          const problem = failure(target, prepared.problems.join(" "));
          // Nothing left to answer (a voice note alone that could not be heard): the sentence is the answer.
          if (!msg.text.trim() && msg.media.every((path) => mediaKind(path) === "audio")) {
            return await this.finish(msg, [user], problem);
          }
          void deps.bus
            .publishOutbound(problem)
            .catch((err: unknown) => deps.log.warn({ err }, "could not send a notice"));
        }
      }
      // A scheduled run runs with no one watching: fewer tools, enforced by the registry itself.
      const registry = isScheduledRun(msg)
        ? deps.registry
            .restricted(scheduledRunOffers(deps.settings.cronTools), withheldInScheduledRun)
            .withoutUntrusted()
        : deps.registry;
      const userMessage: ChatMessage =
        images.length > 0
          ? { role: "user", content: [{ type: "text", text: user.content ?? "" }, ...images] }
          : toChatMessage(user);
      const context = buildTurnContext(
        { ...deps, toolSchemas: () => registry.toSchemas() },
        msg,
        userMessage,
        deps.now?.() ?? new Date(),
      );
      const result = await runAgentLoop(
        {
          model: meter.model,
          registry,
          maxIterations: deps.settings.maxIterations,
          log: deps.log,
          onToolRound: progress && ((calls) => progress.roundStarted(calls)),
          steps: deps.steps && {
            assistant: (message) => deps.steps?.assistant(msg, message),
            started: (call) => deps.steps?.started(msg, call.id),
            result: (call, content) => deps.steps?.result(msg, call.id, content),
          },
          tokens: deps.tokens,
          budget: context.budget,
          onToolResult: (call, text, durationMs) => {
            toolsRan++;
            meter.tool(call.name, text);
            deps.audit.record({
              sessionKey: msg.sessionKey,
              tool: call.name,
              arguments: call.arguments,
              result: text,
              durationMs,
            });
          },
        },
        {
          system: context.system,
          history: context.history,
          user: context.user,
          produced,
          tokenCache: context.tokenCache,
          toolContext: {
            sessionKey: msg.sessionKey,
            inbound: msg,
            workspace: deps.settings.workspace,
            signal,
            bus: deps.bus,
            log: deps.log.child({ session: msg.sessionKey }),
            sentToConversation,
          },
          resume: deps.steps?.load(msg),
        },
      );
      this.toldAboutOutage.clear();
      const replyToId = msg.channel === "system" ? undefined : msg.id;
      // An answer already sent with the message tool is not sent a second time, and a run that
      // may stay silent (the heartbeat) sends nothing when the model answers with its token.
      const text = result.reply.trim();
      const reply =
        text && !sentToConversation.includes(text) && !isSilentReply(text, msg.meta?.silentReply)
          ? { ...target, kind: "reply" as const, text: result.reply, replyToId }
          : undefined;
      await this.finish(msg, [user, ...result.produced], reply);
    } catch (err) {
      outcome = stopSignal.aborted || this.shutdown.signal.aborted ? "stopped" : "error";
      // Shutting down: leave the message pending in the inbox so it runs again after the restart;
      // an orderly stop is no crash, so this start does not count against the message.
      if (this.shutdown.signal.aborted) {
        deps.journal.forgetTurnStart(msg);
        return;
      }
      if (stopSignal.aborted) return await this.finish(msg, [user, ...produced], notice(target, "Stopped."));
      // Nothing happened yet (no tool ran): the message can simply wait for the model and run again.
      if (err instanceof ModelUnavailableError && deps.waitForModel !== false && toolsRan === 0) {
        deps.log.warn(
          { session: msg.sessionKey, err: err.message, retryAt: err.retryAt },
          "model unavailable; the message waits",
        );
        if (msg.channel !== "system" && !this.toldAboutOutage.has(msg.sessionKey)) {
          this.toldAboutOutage.add(msg.sessionKey);
          const text = `The model is not answering right now (${err.message}). Your message is kept and I will answer as soon as it is back.`;
          void deps.bus
            .publishOutbound(notice(target, text))
            .catch((e: unknown) => deps.log.warn({ err: e }, "could not send a notice"));
        }
        // Waiting for the model is no crash: this start does not count against the message.
        deps.journal.forgetTurnStart(msg);
        return err.retryAt;
      }
      if (err instanceof ModelError) {
        outcome = "model_error";
        deps.log.warn({ session: msg.sessionKey, err: err.message }, "model call failed");
        return await this.finish(
          msg,
          [user, ...produced],
          failure(target, `Sorry, ${err.message}.${err.permanent ? "" : " Please try again in a moment."}`),
        );
      }
      deps.log.error({ err, session: msg.sessionKey }, "turn failed");
      await this.finish(
        msg,
        [user, ...produced],
        failure(target, "Sorry, something went wrong on my side. Please try again."),
      );
    } finally {
      progress?.finish();
      // One line per turn for log search: sizes and times only, never message text.
      deps.log.info(meter.finish(msg.sessionKey, outcome), "turn finished");
      deps.bus.publishActivity({ ...activity, busy: false });
      // After the reply went out: consolidation never delays it.
      if (!this.shutdown.signal.aborted) deps.consolidator?.afterTurn(msg.sessionKey, msg.isGroup);
    }
  }

  /** Stores the turn, marks the message done and records the reply in one transaction. */
  private async finish(
    msg: InboundMessage,
    messages: StoredMessage[],
    out: OutboundMessage | undefined,
  ): Promise<undefined> {
    const { deps } = this;
    const outboxId = deps.turns.finishTurn(msg, messages, out);
    // The turn ends here: the channel's sender delivers the reply (and retries it) on its own.
    if (out && outboxId !== undefined) deps.bus.outboundRecorded(out.channel);
    deps.onTurnFinished?.(msg);
    return undefined;
  }

  private async answerCommand(command: "stop" | "status" | "help", lane: Lane, msg: InboundMessage): Promise<void> {
    const target = replyTarget(msg);
    let text = helpText();
    if (command === "stop") {
      const helpers = this.deps.helpers?.cancel(msg.sessionKey) ?? 0;
      const stopping = [
        ...(lane.running ? ["the running turn"] : []),
        ...(helpers > 0 ? [`${helpers} background helper${helpers > 1 ? "s" : ""}`] : []),
      ];
      text = stopping.length ? `Stopping ${stopping.join(" and ")}.` : "Nothing is running.";
      lane.running?.abort(new Error("stopped by /stop"));
    } else if (command === "status") {
      const { running, queued } = this.load;
      const helpers = this.deps.helpers?.list(msg.sessionKey) ?? [];
      const allHelpers = this.deps.helpers?.list().length ?? 0;
      text = [
        `Model: ${this.deps.settings.model}`,
        `Conversation: ${msg.sessionKey}, ${this.deps.conversations.count(msg.sessionKey)} stored messages`,
        `This chat: ${lane.running ? "busy" : "idle"}, ${lane.queue.length} waiting`,
        `All chats: ${running} running, ${queued} waiting`,
        ...(this.deps.helpers ? [`Helpers: ${helpers.length} running here, ${allHelpers} in all`] : []),
        ...helpers.map(
          (h) => `- ${h.id}${h.label ? ` "${h.label}"` : ""}, running for ${formatDuration(Date.now() - h.startedAt)}`,
        ),
        `Up for ${formatDuration(Date.now() - this.startedAt)}`,
        ...(this.deps.statusLines?.() ?? []),
      ].join("\n");
    }
    await this.finish(msg, [], notice(target, text));
  }
}

/** The model answered only with the run's "nothing to say" token (markdown or a full stop around it allowed). */
export function isSilentReply(text: string, token: string | undefined): boolean {
  return token !== undefined && text.replace(/^[\s*_`]+|[\s*_`.!]+$/g, "") === token;
}

/** Turns of one message that may be cut off by a crash before it is set aside. */
const MAX_TURN_STARTS = 2;

const POISON_NOTICE =
  "Sorry, I have set your message aside: pincer stopped twice while working on it. Please try again, perhaps in smaller steps.";

function notice(target: Pick<OutboundMessage, "channel" | "chatId" | "threadId">, text: string): OutboundMessage {
  return { ...target, kind: "notice", text };
}

function failure(target: Pick<OutboundMessage, "channel" | "chatId" | "threadId">, text: string): OutboundMessage {
  return { ...notice(target, text), failed: true };
}

function formatDuration(ms: number): string {
  const minutes = Math.floor(ms / 60_000);
  return minutes < 60 ? `${minutes} min` : `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}
