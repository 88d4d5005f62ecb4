import type { Logger } from "pino";
import type { Config } from "../config/config.js";
import { type Model, ModelError, type ModelReply, type ModelRequest, type UnansweredTry } from "../llm/model.js";
import type { TokenCounter } from "../llm/tokens.js";
import type { Heard } from "../llm/transcribe.js";
import type { Store, UsageEntry } from "../store/store.js";
import { formatDay, formatInZone } from "../time-zone.js";
import { type Periods, periodsAt } from "./periods.js";
import { foldGroups, money, type UsageReport } from "./report.js";

/** What kind of run a message starts: a person's message, or one pincer addressed to itself. */
export type RunKind = "conversation" | "reminder" | "heartbeat" | "helper";
/** What a model call was made for: a turn's kind of run, or the summaries of consolidation. */
type UsageKind = RunKind | "consolidation";

/** A run's calls as counted (who they were for, which scheduled run) and checked. */
export type MeteredRun = Pick<UsageEntry, "sessionKey" | "person" | "runId"> & {
  kind: UsageKind;
  /** What a scheduled run was asked to deliver: a refused one says it each time, so it is not lost. */
  about?: string;
  /** The person's budgets (their role's `usage`). */
  budget?: { dailyTokens?: number; monthlyCost?: number };
};

interface UsageMeterDeps {
  store: Pick<Store["usage"], "record" | "spent" | "groups">;
  tokens: Pick<TokenCounter, "request" | "text">;
  /** usage: the prices and the limits; openai.model: what a reply that names no model is counted under. */
  config: { usage: Config["usage"]; timezone: string; openai: { model: string } };
  log: Pick<Logger, "warn">;
  now?: () => Date;
}

/** A budget is used up: the call was not made (permanent: no fallback is tried). `notice`: absent when already told. */
export class UsageLimitError extends ModelError {
  constructor(
    message: string,
    readonly notice?: string,
  ) {
    super(message, true);
  }
}

/** A minute of audio as tokens: OpenAI's count for gpt-4o-transcribe; whisper-1's $0.006 a minute is a price of 6 a
 * million tokens at this rate. */
const AUDIO_TOKENS_PER_MINUTE = 1000;
/** The most one call is counted at: pincer's own estimate of a huge request stays believable. */
const MAX_COUNT = 100_000_000;
/** As the token counter's calibration: no tokenizer counts a text this many times higher than pincer does. */
const IMPLAUSIBLE = 8;

/** Counts every model call (the endpoint's usage, else pincer's estimate, marked) and checks the budgets before each.
 * Which chats were told of a used-up budget is kept in memory: after a restart, or on another process of a cluster, a
 * chat may be told once more. */
export class UsageMeter {
  /** `chat limit kind` → when the period it was told about ends. */
  private readonly told = new Map<string, number>();

  constructor(private readonly deps: UsageMeterDeps) {}

  /** `model` counted and checked as calls of `run`; a turn wraps it once, so a later refusal knows it cut the turn short. */
  wrap(model: Model, run: MeteredRun): Model {
    let answered = 0;
    return {
      complete: async (request) => {
        await this.checkBefore(run, answered > 0);
        // A try that brought no reply (stopped, timed out, dropped mid-stream) cost what was sent and what it streamed.
        const onUnanswered = ({ model: name, streamed }: UnansweredTry) => {
          const counted = { promptTokens: this.promptOf(request), completionTokens: this.deps.tokens.text(streamed) };
          void this.save(run, counted, name, true);
        };
        const reply = await model.complete({ ...request, onUnanswered });
        answered++;
        await this.record(run, request, reply);
        return reply;
      },
    };
  }

  /** Counts a transcription: the tokens the endpoint reported, else its audio at AUDIO_TOKENS_PER_MINUTE, and its text. */
  async transcribed(run: MeteredRun, heard: Heard): Promise<void> {
    const audio = Math.ceil((heard.seconds * AUDIO_TOKENS_PER_MINUTE) / 60);
    const completion = heard.completionTokens ?? this.deps.tokens.text(heard.text);
    const counted = { promptTokens: heard.promptTokens ?? audio, completionTokens: completion };
    await this.save(run, counted, heard.model, heard.promptTokens === undefined);
  }

  report(sessionKey?: string, person?: string): Promise<UsageReport> {
    return readUsage(this.deps.store, this.deps.config.timezone, this.now(), sessionKey, person);
  }

  private now(): number {
    return (this.deps.now?.() ?? new Date()).getTime();
  }

  /** Throws UsageLimitError when a budget is used up: checked before each call, and before other work that costs (a
   * voice note transcribed). `cutShort`: a call of this run was answered already, so the refusal cuts it short. */
  async checkBefore(run: MeteredRun, cutShort = false): Promise<void> {
    const { prices, ...general } = this.deps.config.usage;
    const { dailyTokens: personDailyTokens, monthlyCost: personMonthlyCost } = run.budget ?? {};
    const limits = { ...general, personDailyTokens, personMonthlyCost };
    if (Object.values(limits).every((limit) => limit === undefined)) return;
    const now = this.now();
    const periods = periodsAt(now, this.deps.config.timezone);
    const spent = await this.deps.store.spent(run.sessionKey, periods.dayStart, periods.monthStart, run.person);
    const verdict = mayCall(spent, limits, periods);
    if (!verdict.ok) throw new UsageLimitError(verdict.reason, this.notice(run, verdict, cutShort, now));
  }

  private notice(run: MeteredRun, verdict: Exclude<Verdict, { ok: true }>, cutShort: boolean, now: number) {
    const resets = `It resets ${formatInZone(verdict.resetsAt, this.deps.config.timezone)}.`;
    if (cutShort) return `I had to stop before finishing: ${verdict.reason}. ${resets}`;
    if (run.about !== undefined)
      return `${SCHEDULED[run.kind as "reminder"]} did not run: ${verdict.reason}. ${resets} It was: ${run.about}`;
    for (const [key, end] of this.told) if (end <= now) this.told.delete(key);
    const key = `${run.sessionKey} ${verdict.limit} ${run.kind}`;
    if (this.told.has(key)) return undefined;
    this.told.set(key, verdict.resetsAt);
    return run.kind === "conversation"
      ? `I cannot answer now: ${verdict.reason}. ${resets} Messages until then are kept but not answered.`
      : `${SCHEDULED[run.kind]} did not run: ${verdict.reason}. ${resets} Until then such runs are skipped.`;
  }

  private promptOf(request: ModelRequest): number {
    return Math.min(MAX_COUNT, this.deps.tokens.request(request.messages, request.tools));
  }

  private async record(run: MeteredRun, request: ModelRequest, { usage, ...reply }: ModelReply): Promise<void> {
    const model = reply.model ?? this.deps.config.openai.model;
    // A prompt count far past what any tokenizer makes of this request (a running total, another request's) is the
    // server's mistake; believed, one call would use up a day's budget.
    const reported = usage?.promptTokens ?? 0;
    if (usage && (reported <= 100_000 || reported <= this.promptOf(request) * IMPLAUSIBLE + 100_000))
      return this.save(run, usage, model, false);
    const answer = reply.content + reply.toolCalls.map((call) => call.name + call.arguments).join("");
    const completionTokens = Math.min(MAX_COUNT, this.deps.tokens.text(answer));
    await this.save(run, { promptTokens: this.promptOf(request), completionTokens }, model, true);
  }

  private async save(run: MeteredRun, tokens: Tokens, model: string, estimated: boolean): Promise<void> {
    const counted = { ...tokens, cachedTokens: tokens.cachedTokens ?? 0 };
    const cost = costOf(counted, this.deps.config.usage.prices[model]);
    // A count that could not be stored must not cost the user the answer.
    await this.deps.store
      .record({ ...run, ...counted, model, estimated, cost, at: this.now() })
      .catch((err: unknown) =>
        this.deps.log.warn({ err, session: run.sessionKey }, "could not record a model call's usage"),
      );
  }
}

/** Today's and this month's calls in `timezone` as of `now`, for one chat (`sessionKey`) and overall; or one person's. */
export async function readUsage(
  store: Pick<Store["usage"], "groups">,
  timezone: string,
  now: number,
  sessionKey?: string,
  person?: string,
): Promise<UsageReport> {
  const { dayStart, monthStart } = periodsAt(now, timezone);
  const groups = await store.groups(monthStart, dayStart, sessionKey, person);
  const day = formatDay(now, timezone);
  return foldGroups(groups, { timezone, day, month: day.slice(0, 7), sessionKey, person });
}

const SCHEDULED: Record<Exclude<UsageKind, "conversation">, string> = {
  reminder: "A scheduled reminder",
  heartbeat: "The heartbeat",
  helper: "A background helper's report",
  consolidation: "Summarising old messages",
};

/** Config `usage`: what may be spent; a limit not set is no limit. Costs are in the price table's currency. */
export type UsageLimits = Omit<Config["usage"], "prices"> & { personDailyTokens?: number; personMonthlyCost?: number };

/** What was spent in the periods the limits count: tokens today, cost this month, overall and in this chat. */
export type Spent = Awaited<ReturnType<Store["usage"]["spent"]>>;

export type Verdict = { ok: true } | { ok: false; limit: keyof UsageLimits; reason: string; resetsAt: number };

/** A limit is reached once what was spent is at or over it (a call already on its way may go past it a little). Of
 * several reached, the one that resets last is named: nothing runs before it resets. */
export function mayCall(spent: Spent, limits: UsageLimits, periods: Periods): Verdict {
  const checks: Array<[keyof UsageLimits, number, number, string]> = [
    ["monthlyCost", spent.monthCost, periods.monthEnd, "the monthly cost budget"],
    ["chatMonthlyCost", spent.chatMonthCost, periods.monthEnd, "this chat's monthly cost budget"],
    ["dailyTokens", spent.dayTokens, periods.dayEnd, "the daily token budget"],
    ["chatDailyTokens", spent.chatDayTokens, periods.dayEnd, "this chat's daily token budget"],
    ["personMonthlyCost", spent.personMonthCost, periods.monthEnd, "your monthly cost budget"],
    ["personDailyTokens", spent.personDayTokens, periods.dayEnd, "your daily token budget"],
  ];
  for (const [limit, used, resetsAt, what] of checks) {
    const max = limits[limit];
    if (max !== undefined && used >= max) {
      const amount = limit.endsWith("Cost") ? `${money(used)} of ${max}` : `${used} of ${max} tokens`;
      const key = limit.startsWith("person") ? "your role's usage" : `usage.${limit}`;
      return { ok: false, limit, resetsAt, reason: `${what} is used up (${amount}, ${key})` };
    }
  }
  return { ok: true };
}

/** A call's tokens (the cached ones are part of the prompt ones). */
type Counted = Pick<UsageEntry, "promptTokens" | "completionTokens" | "cachedTokens">;
/** As counted before saving: none cached unless it says. */
type Tokens = Omit<Counted, "cachedTokens"> & { cachedTokens?: number };

/** What a call cost at `price` (a million tokens' worth; unpriced cached ones cost as prompt ones); undefined without a
 * price (cost unknown, never taken as free). */
export function costOf(counted: Counted, price: Config["usage"]["prices"][string] | undefined): number | undefined {
  if (!price) return undefined;
  const cached = price.cached === undefined ? 0 : counted.cachedTokens;
  const prompt = (counted.promptTokens - cached) * price.prompt + cached * (price.cached ?? 0);
  return (prompt + counted.completionTokens * price.completion) / 1_000_000;
}
