import { setImmediate } from "node:timers/promises";
import type { Logger } from "pino";
import { errorText } from "../bus/types.js";
import type { Model } from "../llm/model.js";
import type { TokenCounter } from "../llm/tokens.js";
import type { PendingMessage, Store } from "../store/store.js";
import { safeSlice } from "../text.js";
import { formatDay, formatMinute } from "../time-zone.js";
import type { UsageMeter } from "../usage/meter.js";
import { CONSOLIDATION_INSTRUCTIONS, parseConsolidation, transcript } from "./consolidation-prompt.js";
import { appendMemoryFacts, readMemoryFile } from "./memory-file.js";

interface ConsolidatorDeps {
  store: Store["memory"];
  model: Model;
  tokens: TokenCounter;
  log: Logger;
  timezone: string;
  /** The context window the endpoint is known to take now. */
  contextTokens: () => number;
  now?: () => Date;
  /** Counts the summaries' model calls and checks the budgets before each. */
  usage?: Pick<UsageMeter, "wrap">;
}

/** The folder whose MEMORY.md a chat's facts join (a person's direct chats: their space's), or none (groups). */
type Space = string | undefined;

/** A conversation's history is summarised ahead of its trim once it passes this share of the context budget… */
const TRIGGER_SHARE = 0.5;
/** …down to this share, so it does not run again at the very next turn. */
const TARGET_SHARE = 0.25;
const MAX_ROUNDS = 50;
const FIRST_RETRY_MS = 30_000;
const MAX_RETRY_MS = 60 * 60 * 1000;

/** Summarises a conversation's oldest turns into dated memory entries (and durable facts into MEMORY.md, for direct
 * chats) once a trim took them out of the prompt, or ahead of it past its share of the budget. In the background, one
 * run per conversation at a time; a failed run (model down, garbage answer) changes nothing and is retried later. */
export class Consolidator {
  private readonly running = new Map<string, Promise<void>>();
  private readonly again = new Set<string>();
  private readonly failures = new Map<string, { count: number; retryAt: number }>();
  private readonly shutdown = new AbortController();

  constructor(private readonly deps: ConsolidatorDeps) {}

  /** Waits for the runs in progress (tests, benchmarks, shutdown). */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running.values()]);
  }

  async stop(): Promise<void> {
    this.shutdown.abort(new Error("pincer is shutting down"));
    await this.idle();
  }

  /** After a turn: consolidates the open conversation if it is over its share. Returns at once. */
  afterTurn(sessionKey: string, space: Space): void {
    if (this.shutdown.signal.aborted) return;
    if (this.running.has(sessionKey)) {
      this.again.add(sessionKey);
      return;
    }
    if (this.now() < (this.failures.get(sessionKey)?.retryAt ?? 0)) return;
    // The check is a few queries: made once the turn's reply is on its way, not before.
    const run = setImmediate()
      .then(() => this.runFor(sessionKey, space))
      .then(() => void this.failures.delete(sessionKey))
      .catch((err: unknown) => this.failed(sessionKey, err))
      .finally(() => {
        this.running.delete(sessionKey);
        if (this.again.delete(sessionKey)) this.afterTurn(sessionKey, space);
      });
    this.running.set(sessionKey, run);
  }

  private failed(sessionKey: string, err: unknown): void {
    if (this.shutdown.signal.aborted) return;
    const count = (this.failures.get(sessionKey)?.count ?? 0) + 1;
    const delay = Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** (count - 1));
    this.failures.set(sessionKey, { count, retryAt: this.now() + delay });
    this.deps.log.warn(
      { session: sessionKey, err: errorText(err), retryInSeconds: delay / 1000 },
      "memory consolidation failed; nothing was changed, it will be retried",
    );
  }

  private async runFor(sessionKey: string, space: Space): Promise<void> {
    const { store } = this.deps;
    const contextTokens = this.deps.contextTokens();
    // Conversations ended by /new are consolidated whole: what they taught is kept.
    for (const archived of await store.archivedWithPending(sessionKey)) {
      await this.consolidate(sessionKey, archived, space, 0);
    }
    const open = await store.openConversation(sessionKey);
    if (open === undefined) return;
    // Turns a trim took out of the prompt are summarised first: their summaries join the prompt at the next trim.
    // Past the trigger, older turns still shown are summarised ahead, so the next trim finds them ready.
    const pending = await store.pendingTokens(open);
    const trimmed = await store.trimmedPendingTokens(open);
    const ahead = pending > Math.floor(contextTokens * TRIGGER_SHARE);
    if (trimmed === 0 && !ahead) return;
    const keep = ahead ? Math.floor(contextTokens * TARGET_SHARE) : Number.POSITIVE_INFINITY;
    await this.consolidate(sessionKey, open, space, Math.min(keep, pending - trimmed));
  }

  /** Consolidates whole turns, oldest first, until at most `keepTokens` of history remain. */
  private async consolidate(sessionKey: string, conversationId: number, space: Space, keepTokens: number) {
    const { store } = this.deps;
    for (let round = 0; round < MAX_ROUNDS; round++) {
      this.shutdown.signal.throwIfAborted();
      const pendingTotal = await store.pendingTokens(conversationId);
      if (pendingTotal <= keepTokens) return;
      const rows = await store.pending(conversationId, this.deps.contextTokens() * 4);
      const complete = rows.reduce((n, r) => n + r.tokens, 0) >= pendingTotal;
      const chunk = this.pickChunk(rows, pendingTotal - keepTokens, complete);
      if (chunk.length === 0) return;
      await this.summarise(sessionKey, conversationId, space, chunk);
    }
  }

  /** The oldest whole turns (a turn starts at a user message, so a tool call never leaves without its result) that
   * cover `need` tokens, as far as their transcript fits in one model request. */
  private pickChunk(rows: PendingMessage[], need: number, complete: boolean): PendingMessage[] {
    const limit = Math.floor(this.deps.contextTokens() * 0.5);
    let consumed = 0;
    let transcriptTokens = 0;
    let best = 0;
    for (let i = 0; i < rows.length; i++) {
      if (i > 0 && rows[i].role === "user") {
        // Past the request's size: stop at the previous turn (the first turn goes, however long).
        if (best > 0 && transcriptTokens > limit) return rows.slice(0, best);
        best = i;
        if (consumed >= need) return rows.slice(0, best);
      }
      consumed += rows[i].tokens;
      transcriptTokens += this.deps.tokens.text(transcript([rows[i]], () => "0000-00-00 00:00")) + 1;
    }
    // Turns are stored whole, so the end of what is pending is a turn's end too.
    if (complete && (best === 0 || transcriptTokens <= limit)) best = rows.length;
    return rows.slice(0, best);
  }

  private async summarise(sessionKey: string, conversationId: number, space: Space, chunk: PendingMessage[]) {
    const { deps } = this;
    // A space's MEMORY.md goes only with its person's direct chats: a summary of another's would carry it there.
    const memory = space ? (readMemoryFile(space)?.text ?? "") : "";
    const limitChars = deps.contextTokens(); // about a quarter of the budget in any script
    const chat = transcript(chunk, (ms) => formatMinute(ms, deps.timezone));
    const who = space ? "a direct chat with the person MEMORY.md is about" : "a group chat, or a chat with a guest";
    const known = safeSlice(memory, 0, Math.floor(limitChars / 4)) || "(empty)";
    const body = `MEMORY.md now:\n${known}\n\nThe chat (${who}):\n${safeSlice(chat, 0, limitChars)}`;
    const model = deps.usage?.wrap(deps.model, { sessionKey, kind: "consolidation" }) ?? deps.model;
    const messages = [
      { role: "system" as const, content: CONSOLIDATION_INSTRUCTIONS },
      { role: "user" as const, content: body },
    ];
    const reply = await model.complete({ messages, signal: this.shutdown.signal });
    const parsed = parseConsolidation(reply.content);
    if (!parsed) throw new Error(`the model's summary was not the JSON asked for: ${safeSlice(reply.content, 0, 120)}`);
    const [first, last] = [chunk[0], chunk[chunk.length - 1]];
    // What a group says stays in its chat's own entries.
    const added = space ? appendMemoryFacts(space, parsed.facts, formatDay(this.now(), deps.timezone)) : [];
    const text = parsed.facts.length > 0 ? `${parsed.summary}\nFacts: ${parsed.facts.join(" · ")}` : parsed.summary;
    const stored = await deps.store.addEntry({
      sessionKey,
      conversationId,
      firstId: first.id,
      throughId: last.id,
      periodStart: first.createdAt,
      periodEnd: last.createdAt,
      text,
      tokens: deps.tokens.rawMessage({ role: "system", content: text }) + 12,
    });
    const counts = { session: sessionKey, messages: chunk.length, factsAdded: added.length, stored };
    deps.log.info(counts, "consolidated old turns into memory");
  }

  private now(): number {
    return (this.deps.now?.() ?? new Date()).getTime();
  }
}
