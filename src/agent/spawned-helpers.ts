import { randomBytes } from "node:crypto";
import type { Logger } from "pino";
import { offeredTo, spaceFor } from "../access/roles.js";
import type { Switchboard } from "../bus/switchboard.js";
import { agentOf, agentSessionKey, deliverToOf, type InboundMessage, personOf } from "../bus/types.js";
import { untilAborted } from "../bus/until-stored.js";
import type { Config } from "../config/config.js";
import type { Model } from "../llm/model.js";
import { FencedOutError } from "../store/cluster.js";
import type { HelperRun, HelperStatus, Store } from "../store/store.js";
import { clip } from "../text.js";
import { formatLocal } from "../time-zone.js";
import type { ToolRegistry } from "../tools/registry.js";
import { ToolError } from "../tools/tool.js";
import type { UsageMeter } from "../usage/meter.js";
import { auditTo, type LoopDeps, runAgentLoop } from "./loop.js";
import { runOf } from "./turn-context.js";

/** Tools a helper never gets: it may not spawn more helpers, write to chats, or schedule jobs. */
const HELPER_DENIED_TOOLS = ["spawn", "message", "cron"];

const RESULT_CHARS = 8000;

export interface HelperDeps extends Pick<LoopDeps, "tokens" | "window" | "approve"> {
  bus: Switchboard;
  store: Store["helperRuns"];
  /** agent.helperModel, or the main one. */
  model: Model;
  registry: ToolRegistry;
  audit: Store["audit"];
  log: Logger;
  config: Pick<Config, "helpers" | "agent" | "openai" | "workspace" | "timezone" | "roles" | "people">;
  /** Clustered: told when a helper starts and ends here, so the others tell it from one whose process died. A helper
   * takes each step only while its guard lets it (its lease is held here); `onLost` stops it the moment it is lost. */
  presence?: {
    started(id: string, onLost: (err: FencedOutError) => void): { check(): Promise<void> } | undefined;
    ended(id: string): void;
  };
  /** Counts the helpers' model calls (under the chat that started them) and checks the budgets. */
  usage: Pick<UsageMeter, "wrap">;
}

/** A running helper as /status shows it. */
export type HelperInfo = Pick<HelperRun, "id" | "sessionKey" | "label" | "startedAt">;

interface Running extends HelperInfo {
  controller: AbortController;
  done: Promise<void>;
  guard?: { check(): Promise<void> };
  /** Set once its lease was lost: another process may have declared it interrupted, so it stops without a word. */
  fenced?: Error;
}

/** Runs spawned helpers in the background: a fresh context (its task its only message), fewer tools, its own limits.
 * Its result enters the bus as a system message to the conversation that spawned it, for the main agent to relay. */
export class HelperManager {
  private readonly runs = new Map<string, Running>();
  private readonly shutdown = new AbortController();

  constructor(private readonly deps: HelperDeps) {}

  async spawn(origin: InboundMessage, task: string, label?: string): Promise<string> {
    const settings = this.deps.config.helpers;
    if (this.shutdown.signal.aborted) throw new ToolError("pincer is shutting down; no helper was started.");
    const here = this.list(origin.sessionKey).length;
    if (here >= settings.maxPerConversation) {
      throw new ToolError(
        `this conversation already has ${here} helpers running (the limit is ${settings.maxPerConversation}); wait for one to finish or do the task yourself.`,
      );
    }
    if (this.runs.size >= settings.maxConcurrent) {
      throw new ToolError(
        `${this.runs.size} helpers are running across all chats (the limit is ${settings.maxConcurrent}); try again when one has finished.`,
      );
    }
    const id = `h-${randomBytes(4).toString("hex")}`;
    const info: HelperInfo = { id, sessionKey: origin.sessionKey, label, startedAt: Date.now() };
    const entry: Running = { ...info, controller: new AbortController(), done: Promise.resolve() };
    // Counted before the write: a spawn elsewhere meanwhile sees the caps with this one in them.
    this.runs.set(id, entry);
    entry.guard = this.deps.presence?.started(id, (err) => {
      entry.fenced ??= err;
      entry.controller.abort(err);
    });
    const forget = () => {
      this.runs.delete(id);
      this.deps.presence?.ended(id);
    };
    await this.deps.store.start({ ...info, task, model: this.modelName(), origin }).catch((err: unknown) => {
      forget();
      throw err;
    });
    entry.done = this.run(entry, origin, task).finally(forget);
    return id;
  }

  list(sessionKey?: string): HelperInfo[] {
    return [...this.runs.values()]
      .filter((r) => sessionKey === undefined || r.sessionKey === sessionKey)
      .map(({ controller, done, ...info }) => info);
  }

  cancel(sessionKey: string): number {
    const mine = [...this.runs.values()].filter((r) => r.sessionKey === sessionKey);
    for (const run of mine) run.controller.abort(new Error("stopped by /stop"));
    return mine.length;
  }

  /** After a restart: helpers left running are marked interrupted, each conversation told once (the message's id is the
   * run's, so the inbox drops a repeat). Clustered, only the runs whose process died (`orphaned` picks them). */
  async recoverInterrupted(
    orphaned?: (runIds: string[]) => Promise<ReadonlySet<string>>,
    why = "pincer was restarted while it worked",
  ): Promise<void> {
    const running = await this.deps.store.running();
    const picked = await orphaned?.(running.map((run) => run.id));
    for (const run of running.filter((r) => !picked || picked.has(r.id))) {
      await this.deps.bus.publishInbound(
        resultMessage(run, "interrupted", `${why}, so it did not finish.`, Date.now()),
      );
      await this.deps.store.finish(run.id, "interrupted", `interrupted: ${why}`, Date.now());
    }
  }

  /** Cancels every helper for shutdown; their runs stay marked running, so the next start reports them. */
  async stop(): Promise<void> {
    this.shutdown.abort(new Error("pincer is shutting down"));
    await Promise.allSettled([...this.runs.values()].map((r) => r.done));
  }

  private modelName(): string {
    return this.deps.config.agent.helperModel ?? this.deps.config.openai.model;
  }

  private async run(entry: Running, origin: InboundMessage, task: string): Promise<void> {
    const { deps } = this;
    const settings = deps.config.helpers;
    const timeout = AbortSignal.timeout(settings.timeoutSeconds * 1000);
    const signal = AbortSignal.any([entry.controller.signal, timeout, this.shutdown.signal]);
    // Its agent's: the agent's approvals (and anything else keyed by agent) govern its calls.
    const sessionKey = agentSessionKey(agentOf(origin.sessionKey), `helper:${entry.id}`);
    const log = deps.log.child({ helper: entry.id, session: origin.sessionKey });
    let status: Exclude<HelperStatus, "running" | "interrupted">;
    let result: string;
    const offered = offeredTo(deps.config, origin.person);
    const { guard } = entry;
    try {
      const loop = runAgentLoop(
        {
          ...deps,
          model: deps.usage.wrap(deps.model, { ...runOf(origin, deps.config), kind: "helper" }),
          // Nobody watches a helper: untrusted MCP servers' tools stay out of its reach.
          // Nor a tool its person's role lacks: a helper has its starter's rights, never more.
          registry: deps.registry
            .restricted((name) => !HELPER_DENIED_TOOLS.includes(name) && (offered?.(name) ?? true))
            .withoutUntrusted(),
          maxIterations: settings.maxIterations,
          log,
          onToolResult: auditTo(deps.audit, sessionKey, log),
          // No step, no tool call, once its lease is lost (as a turn's journal is fenced); nothing is recorded.
          steps: guard && { assistant: () => guard.check(), started: () => guard.check(), result: async () => {} },
        },
        {
          system: helperPrompt(deps.config),
          history: [],
          user: { role: "user", content: task },
          // Nobody watches a helper either: the owner's MEMORY.md stays out of its reach.
          toolContext: {
            sessionKey,
            inbound: origin,
            ...spaceFor(deps.config, origin),
            seesOwnerMemory: false,
            signal,
            bus: deps.bus,
            log,
          },
        },
      );
      // A tool or model call that ignores the signal must not keep the helper past its limit.
      status = "done";
      result = (await untilAborted(loop, signal)).reply.trim() || "(the helper finished without saying anything)";
    } catch (err) {
      if (this.shutdown.signal.aborted) return;
      if (err instanceof FencedOutError) entry.fenced ??= err;
      if (entry.fenced) return fencedOut(entry, log);
      if (entry.controller.signal.aborted) {
        await deps.store.finish(entry.id, "cancelled", "cancelled by /stop", Date.now());
        return;
      }
      status = timeout.aborted ? "timeout" : "failed";
      result = timeout.aborted
        ? `it did not finish within its time limit of ${settings.timeoutSeconds} s and was stopped.`
        : `it failed: ${err instanceof Error ? err.message : String(err)}`;
      log.warn({ status, err }, "helper did not finish");
    }
    const lost = await guard?.check().catch((err: Error) => (entry.fenced ??= err));
    if (lost) return fencedOut(entry, log);
    const run: HelperRun = { ...entry, task, model: this.modelName(), status, origin };
    // Published before the run is marked finished: a crash in between makes the next start report it as interrupted,
    // which the inbox drops (same message id), so the chat hears it once.
    await deps.bus.publishInbound(resultMessage(run, status, result, Date.now()));
    await deps.store.finish(entry.id, status, result, Date.now());
  }
}

function fencedOut(entry: Running, log: Logger): void {
  log.warn(
    { err: entry.fenced?.message },
    "helper stopped: this process lost its lease, so the cluster may have declared it interrupted",
  );
}

export function resultMessage(run: HelperRun, status: HelperStatus, result: string, now: number): InboundMessage {
  const name = run.label ? `"${run.label}" (${run.id})` : run.id;
  const seconds = Math.max(0, Math.round((now - run.startedAt) / 1000));
  const task = clip(run.task, 500);
  const body = result.length > RESULT_CHARS ? `${result.slice(0, RESULT_CHARS)}\n[… result cut]` : result;
  const lines =
    status === "done"
      ? [
          `Background helper ${name} finished after ${seconds} s. Its task was: ${task}`,
          "Its result:",
          body,
          "",
          "Give the user this result now, in your own words. Do not start the helper again.",
        ]
      : [
          `Background helper ${name} did not complete: ${body}`,
          `Its task was: ${task}`,
          "",
          "Tell the user briefly. Do not start it again unless they ask.",
        ];
  return {
    id: `helper:${run.id}`,
    channel: "system",
    chatId: run.origin.chatId,
    senderId: "helper",
    senderName: "helper",
    text: lines.join("\n"),
    media: [],
    isGroup: run.origin.isGroup,
    mentionsBot: true,
    receivedAt: now,
    sessionKey: run.sessionKey,
    // Its person's (its result's turn sees what their own messages would); a helper spawned from a run with a session
    // of its own (the heartbeat) reports where that run's answers go.
    run: { kind: "helper", runId: run.id, status, userId: personOf(run.origin), deliverTo: deliverToOf(run.origin) },
  };
}

function helperPrompt(settings: Pick<Config, "workspace" | "timezone">): string {
  return [
    "You are a background helper of pincer, a personal assistant. You were given one task; do it",
    "with your tools, then answer with the result: facts, findings, file paths you wrote. Your answer",
    "goes to the main assistant, who tells the user, so be complete and plain. You cannot talk to",
    "the user, ask questions, start helpers or schedule jobs; when something is unclear, make a",
    "sensible choice and say which.",
    "",
    `Current time: ${formatLocal(Date.now(), settings.timezone)} (${settings.timezone}).`,
    `Workspace: ${settings.workspace}`,
  ].join("\n");
}
