import type { Usage } from "../llm/collect.js";
import type { Model } from "../llm/model.js";

/** What one turn cost: the per-turn log line and the metrics are made from it. No message text. */
export type TurnReport = ReturnType<TurnMeter["finish"]>;

/** Hooks for metrics; every one is optional and must not throw. */
export interface TurnObserver {
  modelRequest?(seconds: number, ok: boolean): void;
  toolCall?(tool: string, ok: boolean): void;
  turnFinished?(report: TurnReport): void;
}

export class TurnMeter {
  readonly model: Model;
  private readonly started = performance.now();
  private modelMs = 0;
  private modelCalls = 0;
  toolCalls = 0;
  /** The endpoint's counts, summed; `cachedTokens`: of the prompt's, those it served from its cache (where it says). */
  private readonly tokens: Partial<Usage> = {};
  /** Where the turn's own time went (ms, two decimals): waiting in the inbox, building the prompt, storing it. */
  private readonly stages: { waitedMs?: number; contextMs?: number; storeMs?: number } = {};

  constructor(
    model: Model,
    private readonly observer: TurnObserver = {},
    /** When the message was accepted (epoch ms): how long it waited is part of the report. */
    receivedAt?: number,
  ) {
    if (receivedAt !== undefined) this.stages.waitedMs = Math.max(0, Date.now() - receivedAt);
    this.model = {
      complete: async (request) => {
        const t0 = performance.now();
        let ok = false;
        try {
          const reply = await model.complete(request);
          ok = true;
          for (const key of ["promptTokens", "completionTokens", "cachedTokens"] as const) {
            const n = reply.usage?.[key];
            if (n !== undefined) this.tokens[key] = (this.tokens[key] ?? 0) + n;
          }
          return reply;
        } finally {
          const ms = performance.now() - t0;
          this.modelMs += ms;
          this.modelCalls++;
          this.observer.modelRequest?.(ms / 1000, ok);
        }
      },
    };
  }

  contextBuilt(): void {
    this.stages.contextMs = round2(performance.now() - this.started);
  }

  stored(ms: number): void {
    this.stages.storeMs = round2(ms);
  }

  tool(name: string, result: string): void {
    this.toolCalls++;
    this.observer.toolCall?.(name, !result.startsWith("Error:"));
  }

  finish(session: string, outcome: "ok" | "stopped" | "model_error" | "error") {
    const report = {
      session,
      durationMs: Math.round(performance.now() - this.started),
      modelMs: Math.round(this.modelMs),
      modelCalls: this.modelCalls,
      toolCalls: this.toolCalls,
      ...this.tokens,
      outcome,
      ...this.stages,
    };
    this.observer.turnFinished?.(report);
    return report;
  }
}

const round2 = (ms: number) => Math.round(ms * 100) / 100;
