import { type MemorySharing, seesOwnerMemory } from "../access/policy.js";
import { offeredTo, spaceFor } from "../access/roles.js";
import { mediaKind } from "../bus/media-kind.js";
import { type InboundMessage, type OutboundMessage, replyTarget, silentReplyOf } from "../bus/types.js";
import { untilAborted } from "../bus/until-stored.js";
import { type ChatMessage, ModelError } from "../llm/model.js";
import { ModelUnavailableError } from "../llm/resilient.js";
import { isScheduledRun } from "../scheduler/run-message.js";
import { FencedOutError } from "../store/cluster.js";
import type { StoredMessage } from "../store/store.js";
import type { ToolRegistry } from "../tools/registry.js";
import { withTurnFacts } from "../turn-facts.js";
import type { ContentPart } from "./attachments.js";
import { commandOf } from "./commands.js";
import { toChatMessage, userContent } from "./context.js";
import { BudgetError, tooSmallFor } from "./context-budget.js";
import { ConversationMovedError } from "./lanes.js";
import { auditTo, runAgentLoop } from "./loop.js";
import type { ChatModels } from "./model-choice.js";
import type { ModelWaits } from "./model-wait.js";
import { failure, isSilentReply, modelFailure, newConversationNotice, notice, POISON_NOTICE } from "./notices.js";
import type { ProgressReporter } from "./progress.js";
import { buildTurnContext, ChatForms, runOf, type TurnContextDeps } from "./turn-context.js";
import type { TurnOutlet } from "./turn-outlet.js";
import { TurnMeter, type TurnReport } from "./turn-stats.js";
import type { WorkerDeps } from "./worker-deps.js";

/** Turns of one message that may be cut off by a crash before it is set aside. */
const MAX_TURN_STARTS = 2;

/** How a turn that threw ends, first match wins, and what it counts as in the turn's log line and metrics. */
const ENDINGS = [
  // Left pending in the inbox, the start not counted (an orderly stop is no crash): it runs again after the restart.
  { ending: "shutdown", when: (_err: unknown, turn: TurnState) => turn.shuttingDown, outcome: "stopped" },
  // Another process runs the conversation now and resumes this turn from its journal.
  { ending: "moved", when: (_err, turn) => turn.reason instanceof ConversationMovedError, outcome: "stopped" },
  // Another process answered the message meanwhile (this one was paused): nothing to add.
  { ending: "fenced", when: (err) => err instanceof FencedOutError, outcome: undefined },
  { ending: "stopped", when: (_err, turn) => turn.aborted, outcome: "stopped" },
  // Nothing happened yet (no tool ran): the message can wait for the model and run again.
  { ending: "wait", when: (err, turn) => err instanceof ModelUnavailableError && turn.mayWait, outcome: "error" },
  { ending: "model", when: (err) => err instanceof ModelError, outcome: "model_error" },
  { ending: "too-big", when: (err) => err instanceof BudgetError, outcome: "error" },
  { ending: "crash", when: () => true, outcome: "error" },
] as const satisfies ReadonlyArray<{
  ending: string;
  when: (err: unknown, turn: TurnState) => boolean;
  /** undefined: as the turn's signal says (stopped when it was aborted). */
  outcome: TurnReport["outcome"] | undefined;
}>;

export type Ending = (typeof ENDINGS)[number]["ending"];

export interface TurnState {
  shuttingDown: boolean;
  /** The turn's signal: aborted by /stop, the shutdown or a move, and why. */
  aborted: boolean;
  reason: unknown;
  /** Whether it may wait for the model (no tool ran, and waiting is on). */
  mayWait: boolean;
}

export function endingOf(err: unknown, turn: TurnState): { ending: Ending; outcome: TurnReport["outcome"] } {
  const row = ENDINGS.find((r) => r.when(err, turn))!;
  return { ending: row.ending, outcome: row.outcome ?? (turn.aborted ? "stopped" : "error") };
}

type PreflightDeps = Pick<
  WorkerDeps,
  "senderHasAccess" | "journal" | "conversations" | "attachments" | "log" | "now" | "config" | "usage"
>;
type ContextDeps = Pick<WorkerDeps, "registry" | "ready" | "config"> &
  Omit<TurnContextDeps, "contextTokens" | "ownerMemory" | "toolSchemas" | "forms">;
type LoopStageDeps = Pick<WorkerDeps, "audit" | "steps" | "tokens" | "approve" | "log" | "config" | "bus">;

interface Turn {
  msg: InboundMessage;
  signal: AbortSignal;
  chosen: Awaited<ReturnType<ChatModels["forTurn"]>>;
  meter: TurnMeter;
  progress: ProgressReporter;
  user: StoredMessage;
  images: ContentPart[];
  /** Finished rounds of the turn: stored even when the turn then fails. */
  produced: StoredMessage[];
  /** What the message tool already said in this conversation (not said again as the reply). */
  sentToConversation: string[];
}

/** One message's turn: preflight (access, crashes, /new, attachments) → context (tools, prompt, history) → loop (the
 * model and the tools) → finish (the reply), all sent through the outlet; a turn that throws ends as ENDINGS says. */
export class TurnRunner {
  private readonly forms = new ChatForms();

  constructor(
    private readonly deps: WorkerDeps,
    private readonly outlet: TurnOutlet,
    private readonly modelWaits: ModelWaits,
    private readonly sharing: MemorySharing,
    private readonly shutdown: AbortSignal,
    /** After the reply went out (consolidation never delays it). */
    private readonly afterTurn: (msg: InboundMessage) => void,
  ) {}

  /** `signal`: /stop and the shutdown. Returns when to run the message again if the model was away. */
  async run(queued: InboundMessage, signal: AbortSignal): Promise<number | undefined> {
    const { deps, outlet } = this;
    // A run the gate did not see (a scheduled one; one accepted before an upgrade) is its person's too.
    const msg = queued.person ? queued : { ...queued, person: await deps.access?.whoIs(queued) };
    const startedAt = Date.now();
    const activity = { ...replyTarget(msg), sessionKey: msg.sessionKey };
    deps.bus.publishActivity({ ...activity, busy: true });
    const progress = outlet.progress(msg);
    const chosen = await deps.chatModels.forTurn(msg);
    const meter = new TurnMeter(deps.usage.wrap(chosen.model, runOf(msg, deps.config)), deps.observer, msg.receivedAt);
    const user: StoredMessage = { role: "user", content: stamped(deps, userContent(msg)), createdAt: msg.receivedAt };
    const turn: Turn = { msg, signal, chosen, meter, progress, user, images: [], produced: [], sentToConversation: [] };
    let outcome: TurnReport["outcome"] = "ok";
    try {
      if (!(await preflight(deps, outlet, turn))) return undefined;
      const input = await context(deps, turn, seesOwnerMemory(msg, this.sharing), this.forms);
      const reply = await loop(deps, outlet, turn, input);
      this.modelWaits.answered();
      await finish(deps, outlet, turn, reply);
    } catch (err) {
      const mayWait = deps.waitForModel && meter.toolCalls === 0;
      const state = { shuttingDown: this.shutdown.aborted, aborted: signal.aborted, reason: signal.reason, mayWait };
      const ended = endingOf(err, state);
      outcome = ended.outcome;
      return await this.end(ended.ending, err, turn, startedAt);
    } finally {
      progress.finish();
      // One line per turn for log search: sizes and times only, never message text.
      deps.log.info(meter.finish(msg.sessionKey, outcome), "turn finished");
      deps.bus.publishActivity({ ...activity, busy: false });
      if (!this.shutdown.aborted) this.afterTurn(msg);
    }
  }

  private async end(ending: Ending, err: unknown, turn: Turn, startedAt: number): Promise<number | undefined> {
    const { deps, outlet } = this;
    const { msg } = turn;
    const session = msg.sessionKey;
    const target = replyTarget(msg);
    const fail = (out: OutboundMessage | undefined) => outlet.finish(msg, [turn.user, ...turn.produced], out);
    switch (ending) {
      case "shutdown":
        return void (await deps.journal.forgetTurnStart(msg));
      case "moved":
        return undefined;
      case "fenced":
        return void deps.onTurnFinished?.(msg);
      case "stopped":
        return await fail(outlet.stopped(msg));
      case "wait":
        return await this.modelWaits.unavailable(msg, err as ModelUnavailableError, startedAt);
      case "model":
        deps.log.warn({ session, err: (err as ModelError).message }, "model call failed");
        return await fail(modelFailure(target, err as ModelError));
      case "too-big": {
        const { needed, budget } = err as BudgetError;
        deps.log.warn({ session, needed, budget }, "the prompt does not fit");
        return await fail(failure(target, tooSmallFor(err as BudgetError, { ...deps, window: turn.chosen.window })));
      }
      case "crash":
        deps.log.error({ err, session }, "turn failed");
        return await fail(failure(target, "Sorry, something went wrong on my side. Please try again."));
    }
  }
}

function stamped(deps: Pick<WorkerDeps, "now" | "config">, content: string): string {
  return withTurnFacts(content, deps.now?.() ?? new Date(), deps.config.timezone);
}

/** Whether the turn goes on: a sender who lost access, a message that crashed pincer twice, /new and an attachment
 * that says nothing end it here; readable attachments join the user's message. */
async function preflight(deps: PreflightDeps, outlet: TurnOutlet, turn: Turn): Promise<boolean> {
  const { msg } = turn;
  const target = replyTarget(msg);
  const endHere = async (stored: StoredMessage[], out?: OutboundMessage) => {
    await outlet.finish(msg, stored, out);
    return false;
  };
  if (!(await deps.senderHasAccess(msg))) {
    deps.log.info(
      { session: msg.sessionKey, userId: msg.senderId },
      "dropping a queued message: its sender lost access",
    );
    return await endHere([]);
  }
  // A message whose turn was cut off twice (the daemon died during it) is not run a third time.
  const starts = await deps.journal.recordTurnStart(msg);
  if (starts > MAX_TURN_STARTS) {
    const dropped = { session: msg.sessionKey, id: msg.id, starts: starts - 1 };
    deps.log.warn(dropped, "dropping a message that crashed pincer");
    return await endHere([], notice(target, POISON_NOTICE));
  }
  if (commandOf(msg) === "new") {
    await deps.conversations.archive(msg.sessionKey);
    return await endHere([], notice(target, newConversationNotice(0)));
  }
  if (msg.media.length === 0) return true;
  // A used-up budget stops the turn before its voice notes are transcribed (they cost too).
  const run = runOf(msg, deps.config);
  await deps.usage.checkBefore(run);
  const prepared = await deps.attachments(msg.media, turn.signal, run);
  turn.user = { ...turn.user, content: stamped(deps, userContent(msg, prepared.lines)) };
  turn.images = prepared.images;
  if (prepared.problems.length === 0) return true;
  const problem = failure(target, prepared.problems.join(" "));
  // Nothing left to answer (a voice note alone that could not be heard): the sentence is the answer.
  if (!msg.text.trim() && msg.media.every((path) => mediaKind(path) === "audio")) {
    return await endHere([turn.user], problem);
  }
  outlet.aside(problem);
  return true;
}

/** The tools this run may use, and the prompt: instructions, the history that fits the window, the user's message. */
async function context(deps: ContextDeps, turn: Turn, ownerMemory: boolean, forms: ChatForms) {
  const { msg, images, chosen } = turn;
  // MCP servers' first connection attempts and the endpoint's context, bounded, once after a start. Before the view
  // below: it copies the tools registered by then, and the servers' tools are registered as they connect.
  await untilAborted(deps.ready(), turn.signal);
  // Only the tools of the role of the person who wrote (in a group too): the same list every turn of theirs.
  const offered = offeredTo(deps.config, msg.person);
  const runs = registryFor(msg, deps.registry, deps.config.cron.tools);
  const registry = offered ? runs.restricted(offered) : runs;
  const userMessage: ChatMessage =
    images.length > 0
      ? { role: "user", content: [{ type: "text", text: turn.user.content ?? "" }, ...images] }
      : toChatMessage(turn.user);
  const toolSchemas = () => registry.toSchemas();
  const contextDeps = { ...deps, ownerMemory, forms, contextTokens: chosen.window(), toolSchemas };
  const prompt = await buildTurnContext(contextDeps, msg, userMessage);
  turn.meter.contextBuilt();
  return { registry, prompt, ownerMemory };
}

/** The model and the tools, round after round, resumed from the turn's journal after a crash; the reply's text. */
async function loop(
  deps: LoopStageDeps,
  outlet: TurnOutlet,
  turn: Turn,
  { registry, prompt, ownerMemory }: Awaited<ReturnType<typeof context>>,
): Promise<string> {
  const { msg, signal, meter, chosen } = turn;
  const audited = auditTo(deps.audit, msg.sessionKey, deps.log);
  const { produced, reply } = await runAgentLoop(
    {
      model: meter.model,
      registry,
      maxIterations: deps.config.agent.maxIterations,
      log: deps.log,
      steps: deps.steps,
      tokens: deps.tokens,
      approve: deps.approve,
      window: chosen.window,
      recheckWindow: chosen.recheck,
      onToolRound: (calls) => turn.progress.roundStarted(calls),
      onText: outlet.draft(msg),
      onToolResult: (call, text, durationMs) => {
        meter.tool(call.name, text);
        audited(call, text, durationMs);
      },
    },
    {
      ...prompt,
      produced: turn.produced,
      toolContext: {
        sessionKey: msg.sessionKey,
        inbound: msg,
        ...spaceFor(deps.config, msg),
        seesOwnerMemory: ownerMemory,
        signal,
        bus: deps.bus,
        log: deps.log.child({ session: msg.sessionKey }),
        sentToConversation: turn.sentToConversation,
      },
      resume: await deps.steps.load(msg),
    },
  );
  turn.produced = produced;
  return reply;
}

/** The reply goes out (spoken too where the chat wants it), unless the message tool already said it or the run may stay
 * silent (the heartbeat's token). */
async function finish(deps: Pick<WorkerDeps, "voice">, outlet: TurnOutlet, turn: Turn, reply: string): Promise<void> {
  const { msg } = turn;
  const text = reply.trim();
  const silent = !text || turn.sentToConversation.includes(text) || isSilentReply(text, silentReplyOf(msg));
  const replyToId = msg.channel === "system" ? undefined : msg.id;
  const out: OutboundMessage = { ...replyTarget(msg), kind: "reply", text: reply, replyToId };
  // Bounded, and on any failure the text goes alone.
  const spoken = silent || !deps.voice ? out : await deps.voice.dress(msg, out, turn.signal);
  await outlet.finish(msg, [turn.user, ...turn.produced], silent ? undefined : spoken, turn.meter);
}

/** Never in a scheduled run, whatever the config says: no one watches it, so no new jobs (runaway loops), no helpers. */
const NEVER_IN_SCHEDULED_RUNS: readonly string[] = ["cron", "spawn"];

export function scheduledRunOffers(configured: readonly string[] | undefined): (name: string) => boolean {
  return (name) => !NEVER_IN_SCHEDULED_RUNS.includes(name) && (configured === undefined || configured.includes(name));
}

export function withheldInScheduledRun(name: string): string {
  return NEVER_IN_SCHEDULED_RUNS.includes(name)
    ? `${name} is not available in a scheduled run: it may not create jobs or start helpers. Deliver the result in your reply instead.`
    : `${name} is not available in a scheduled run (config cron.tools lists the tools it may use).`;
}

/** A run nobody watches (every message pincer addresses to itself: reminders, the heartbeat, helpers' results). */
export function nobodyWatches(msg: Pick<InboundMessage, "channel">): boolean {
  return msg.channel === "system";
}

/** The tools a run may use: runs nobody watches get fewer (no untrusted MCP tools), enforced by the registry. */
export function registryFor(msg: InboundMessage, registry: ToolRegistry, cronTools?: readonly string[]): ToolRegistry {
  const scheduled = isScheduledRun(msg)
    ? registry.restricted(scheduledRunOffers(cronTools), withheldInScheduledRun)
    : registry;
  return nobodyWatches(msg) ? scheduled.withoutUntrusted() : scheduled;
}
