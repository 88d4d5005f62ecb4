import type { Logger } from "pino";
import { replyTarget } from "../bus/types.js";
import { type ChatMessage, ContextRefusedError, type Model, type ModelReply } from "../llm/model.js";
import { storableArguments, type ToolCall } from "../llm/reply.js";
import type { TokenCounter } from "../llm/tokens.js";
import type { Store, StoredMessage, TurnSoFar } from "../store/store.js";
import { planBatches } from "../tools/batching.js";
import type { ToolRegistry } from "../tools/registry.js";
import type { ToolContext } from "../tools/tool.js";
import { toChatMessage } from "./context.js";
import { answerReserve, BudgetError, fitRequest, requestBudget } from "./context-budget.js";
import { askAgainNote, finalText, isFinal, textCallsNotice } from "./reply-policy.js";

export interface LoopDeps {
  model: Model;
  registry: ToolRegistry;
  maxIterations: number;
  log: Logger;
  onToolResult?: (call: ToolCall, result: string, durationMs: number) => void;
  onText?: (textSoFar: string) => void;
  /** When a round of tool calls starts; what it returns, when the round ends (progress notes). */
  onToolRound?: (calls: ToolCall[]) => () => void;
  /** The turn's journal: each step is recorded before the next one starts, so a crash can resume. */
  steps?: Pick<Store["steps"], "assistant" | "started" | "result">;
  /** With both, every request is fitted (fitRequest) to `window()`, the answer's reserve taken off. */
  tokens?: TokenCounter;
  window?: () => number;
  /** When the request does not fit `window()`: asks whether the endpoint takes more now (true: try again). */
  recheckWindow?: () => Promise<boolean>;
  /** Asks a person before a call where config `approvals` says so: undefined to run it, else its result. */
  approve?: (call: ToolCall, ctx: ToolContext) => Promise<string | undefined>;
}

/** The message a tool call gets when it was running as the process died and is not safe to repeat. */
export const INTERRUPTED =
  "Error: interrupted by a restart; it may or may not have taken effect. Check before trying again.";

export interface LoopInput {
  system: string;
  history: ChatMessage[];
  user: ChatMessage;
  toolContext: ToolContext;
  /** What this turn did before a crash cut it short: replayed as it was, then the loop goes on. */
  resume?: TurnSoFar;
  /** Filled as the turn goes (a call only with its results): a turn that fails still stores its finished rounds. */
  produced?: StoredMessage[];
  /** Raw token counts already known (the history's, from the store). */
  tokenCache?: WeakMap<ChatMessage, number>;
}

const LIMIT_NOTE =
  "You have used all tool calls allowed for this turn. Answer the user now with what you have, and say what is left undone.";

/** One turn: call the model, run the tools it asks for (batched; docs/tools.md), feed results back, until it answers
 * in plain text or the iteration limit is reached. `produced`: what to store after the user's message. */
export async function runAgentLoop(
  deps: LoopDeps,
  input: LoopInput,
): Promise<{ produced: StoredMessage[]; reply: string }> {
  const ctx = input.toolContext;
  const messages: ChatMessage[] = [{ role: "system", content: input.system }, ...input.history, input.user];
  const userIndex = messages.length - 1;
  const produced: StoredMessage[] = input.produced ?? [];
  const tools = deps.registry.toSchemas();
  const cache = input.tokenCache ?? new WeakMap<ChatMessage, number>();
  const complete = (note: string | undefined, withTools: boolean) =>
    callModel(deps, withNote(messages, note), userIndex, withTools ? tools : undefined, ctx, cache);
  const add = (step: StoredMessage) => {
    produced.push(step);
    messages.push(toChatMessage(step));
  };
  let iteration = input.resume?.produced.length ? await resume(deps, input.resume, ctx, add) : 0;
  let note: string | undefined;
  let askedAgain = false;
  let final: ModelReply | undefined;

  for (; iteration < deps.maxIterations; iteration++) {
    const reply = await complete(note, true);
    note = undefined;
    const again = askedAgain ? undefined : askAgainNote(reply);
    if (again) {
      // The unusable reply is neither stored nor sent back: only the note is.
      deps.log.info({ session: ctx.sessionKey, finishReason: reply.finishReason }, "asking the model again");
      askedAgain = true;
      note = again;
      iteration--;
      continue;
    }
    if (isFinal(reply)) {
      final = reply;
      break;
    }
    const calls = reply.toolCalls.map((call, i) => ({ ...call, id: call.id || `call_${iteration}_${i}` }));
    // Run as sent (a broken call gets its error), kept as something every server will read back.
    const kept = calls.map((call) => ({ ...call, arguments: storableArguments(call.arguments) }));
    const assistant: StoredMessage = { role: "assistant", content: reply.content || null, toolCalls: kept };
    await deps.steps?.assistant(ctx.inbound, assistant);
    messages.push(toChatMessage(assistant));

    // The chat never shows markup: calls read from the model's text are said before they run.
    if (reply.fromText)
      await ctx.bus.publishOutbound({ ...replyTarget(ctx.inbound), kind: "notice", text: textCallsNotice(calls) });
    const roundEnded = deps.onToolRound?.(calls);
    const results = await runToolCalls(deps, calls, ctx).finally(roundEnded);
    produced.push(assistant);
    // Stored as sent, and sent again later as now (toChatMessage): the next turn's request starts with this one's.
    for (const [i, call] of calls.entries()) add({ role: "tool", content: results[i], toolCallId: call.id });
    ctx.signal.throwIfAborted();
    // The calls left out (past the cap, unnamed, unknown) get one line, not a result each.
    if (reply.discarded?.length) {
      note = `Error: your last reply also contained ${reply.discarded.join(" and ")}; those were not run.`;
    }
  }

  if (!final) deps.log.info({ session: ctx.sessionKey }, "iteration limit reached");
  const text = finalText(final ?? (await complete(LIMIT_NOTE, false)));
  produced.push({ role: "assistant", content: text });
  return { produced, reply: text };
}

/** The request with pincer's note to the model last, as a user message: chat templates refuse a system message that is
 * not the first (vLLM's "System message must be at the beginning"), and some refuse two user messages in a row, so a
 * note after the user's own message joins it. */
export function withNote(messages: ChatMessage[], note: string | undefined): ChatMessage[] {
  if (note === undefined) return messages;
  const last = messages.at(-1);
  if (last?.role !== "user" || typeof last.content !== "string") return [...messages, { role: "user", content: note }];
  return [...messages.slice(0, -1), { role: "user", content: `${last.content}\n\n${note}` }];
}

/** Replays a cut-short turn through `add`, then finishes its last round: calls that never started run now, a call that
 * was running runs again only if its tool is repeatable, else it gets INTERRUPTED. Returns the rounds already done. */
async function resume(
  deps: LoopDeps,
  soFar: TurnSoFar,
  ctx: ToolContext,
  add: (step: StoredMessage) => void,
): Promise<number> {
  for (const step of soFar.produced) add(step);
  const rounds = soFar.produced.filter((step) => step.role === "assistant").length;
  const last = soFar.produced.findLast((step) => step.role === "assistant");
  const answered = new Set(soFar.produced.map((step) => step.toolCallId));
  const open = (last?.toolCalls ?? []).filter((call) => !answered.has(call.id));
  if (open.length === 0) return rounds;
  deps.log.info({ session: ctx.sessionKey, calls: open.map((c) => c.name) }, "resuming a turn cut short");
  const cutShort = open.filter((call) => soFar.interrupted.has(call.id) && !deps.registry.isRepeatable(call.name));
  for (const call of cutShort) await deps.steps?.result(ctx.inbound, call.id, INTERRUPTED);
  const rest = open.filter((call) => !cutShort.includes(call));
  const results = await runToolCalls(deps, rest, ctx);
  for (const call of open) {
    const content = cutShort.includes(call) ? INTERRUPTED : results[rest.indexOf(call)];
    add({ role: "tool", content, toolCallId: call.id });
  }
  ctx.signal.throwIfAborted();
  return rounds;
}

/** One model call, fitted to the window first; the endpoint's `usage` calibrates the counter. A request refused as too
 * long is fitted to what the refusal says (the window, its cost in the server's tokens) and sent once more, at once. */
async function callModel(
  deps: LoopDeps,
  messages: ChatMessage[],
  userIndex: number,
  tools: ReturnType<ToolRegistry["toSchemas"]> | undefined,
  { signal, sessionKey: conversation }: Pick<ToolContext, "signal" | "sessionKey">,
  cache: WeakMap<ChatMessage, number>,
): Promise<ModelReply> {
  const { tokens, window, onText } = deps;
  const asked = { tools, signal, onText, conversation };
  if (!tokens || !window) return deps.model.complete({ ...asked, messages });
  const fitTo = (budget: number) => fitRequest({ messages, userIndex, tools, counter: tokens, budget, cache });
  let fitted: ReturnType<typeof fitRequest>;
  try {
    fitted = fitTo(requestBudget(window()));
  } catch (err) {
    // A window learned from the server may be out of date: the server can have been restarted bigger.
    if (!(err instanceof BudgetError) || !(await deps.recheckWindow?.())) throw err;
    fitted = fitTo(requestBudget(window()));
  }
  // The answer gets the room the budget kept for it, and no more: a runaway reply ends there.
  let maxTokens = answerReserve(window());
  const send = async () => {
    const reply = await deps.model.complete({ ...asked, messages: fitted.messages, maxTokens });
    if (reply.usage) tokens.calibrate(fitted.tokens, reply.usage.promptTokens);
    return reply;
  };
  try {
    return await send();
  } catch (err) {
    if (!(err instanceof ContextRefusedError) || signal.aborted) throw err;
    const { contextTokens, promptTokens } = err.refusal;
    const sent = fitted.tokens;
    if (promptTokens) tokens.calibrate(sent, promptTokens);
    // Without numbers, all that is known is that what went was too much. With them, a tenth is kept spare: our count
    // just proved low, and servers that count max_tokens in (vLLM) have no other slack.
    const budget = contextTokens
      ? Math.floor(requestBudget(Math.min(window(), contextTokens)) * 0.9)
      : Math.floor(sent * 0.75);
    if (contextTokens) maxTokens = answerReserve(Math.min(window(), contextTokens));
    deps.log.info(
      { contextTokens, promptTokens, sent, budget },
      "the endpoint refused the request as too long; fitting it to the endpoint's context and asking again",
    );
    fitted = fitTo(budget);
    return await send();
  }
}

/** An onToolResult that records each call in the audit log; a failed write is logged, never fails the run. */
export function auditTo(audit: Store["audit"], sessionKey: string, log: Logger): NonNullable<LoopDeps["onToolResult"]> {
  return (call, result, durationMs) =>
    void audit
      .record({ sessionKey, tool: call.name, arguments: call.arguments, result, durationMs })
      .catch((err: unknown) => log.warn({ err, tool: call.name }, "could not record a tool call in the audit"));
}

async function runToolCalls(deps: LoopDeps, calls: ToolCall[], ctx: ToolContext): Promise<string[]> {
  const results: string[] = new Array(calls.length);
  for (const batch of planBatches(calls, (call) => deps.registry.isReadOnly(call.name))) {
    ctx.signal.throwIfAborted();
    await Promise.all(
      batch.map(async (index) => {
        const call = calls[index];
        const started = performance.now();
        // Asked first (a call waiting for its tap has not started: a resumed turn asks again, or waits on).
        const refused = await deps.approve?.(call, ctx);
        if (refused === undefined) await deps.steps?.started(ctx.inbound, call.id);
        results[index] = refused ?? (await deps.registry.execute(call.name, call.arguments, ctx));
        // Not recorded once the turn is cancelled: a shutdown's "cancelled" is not the tool's result.
        if (!ctx.signal.aborted) await deps.steps?.result(ctx.inbound, call.id, results[index]);
        deps.onToolResult?.(call, results[index], performance.now() - started);
      }),
    );
  }
  return results;
}
