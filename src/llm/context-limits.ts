import { readFileSync, renameSync, writeFileSync } from "node:fs";
import type { Logger } from "pino";
import { contextFromModels, contextFromProps } from "./context-window.js";

/** Where a known context came from: asked up front, or read from a refusal. */
export type ContextSource = "props" | "models" | "refusal";

type Known = { tokens: number; source: ContextSource; at: string };

/** Endpoints remembered at most; the oldest goes first. */
const MAX_ENTRIES = 32;

/** The context windows of the endpoints pincer talks to, per `model at baseUrl`, kept in a small JSON file so a restart
 * knows them before the first turn. What a server says up front replaces what was known (it may have been restarted
 * with another `-c`); a refusal can only make the known window smaller. */
export class ContextLimits {
  private readonly known = new Map<string, Known>();

  constructor(
    private readonly file: string | undefined,
    private readonly log: Pick<Logger, "info" | "warn">,
  ) {
    if (!file) return;
    try {
      const saved = JSON.parse(readFileSync(file, "utf8")) as Record<string, Known>;
      for (const [key, entry] of Object.entries(saved)) {
        if (Number.isSafeInteger(entry?.tokens) && entry.tokens > 0) this.known.set(key, entry);
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") {
        log.warn(
          { file, err: (err as Error).message },
          "the remembered context windows are unreadable; learning them again",
        );
      }
    }
  }

  get(endpoint: string): number | undefined {
    return this.known.get(endpoint)?.tokens;
  }

  /** Forgets what a refusal taught (the server may have been restarted with more). */
  forgetRefusal(endpoint: string): void {
    if (this.known.get(endpoint)?.source !== "refusal") return;
    this.known.delete(endpoint);
    this.save();
  }

  learn(endpoint: string, tokens: number, source: ContextSource): void {
    const before = this.known.get(endpoint);
    if (source === "refusal" && before && before.tokens <= tokens) return;
    if (before?.tokens === tokens && before.source === source) return;
    this.known.delete(endpoint);
    this.known.set(endpoint, { tokens, source, at: new Date().toISOString() });
    while (this.known.size > MAX_ENTRIES) this.known.delete(this.known.keys().next().value as string);
    this.log.info(
      { endpoint, contextTokens: tokens, source, before: before?.tokens },
      "learned the model's context window",
    );
    this.save();
  }

  private save(): void {
    if (!this.file) return;
    try {
      const temp = `${this.file}.${process.pid}.tmp`;
      writeFileSync(temp, `${JSON.stringify(Object.fromEntries(this.known), null, 2)}\n`, { mode: 0o600 });
      renameSync(temp, this.file);
    } catch (err) {
      this.log.warn({ file: this.file, err: (err as Error).message }, "could not remember the context windows");
    }
  }
}

/** The `/status` line: the window turns fit, and what limits it. */
export function contextLine(window: number, configured: number): string {
  const n = (x: number) => x.toLocaleString("en-US");
  return window < configured
    ? `Context: ${n(window)} tokens (the model server's; agent.contextTokens is ${n(configured)})`
    : `Context: ${n(window)} tokens (agent.contextTokens)`;
}

type DiscoverOptions = { baseUrl: string; apiKey: string; model: string; timeoutMs: number };

/** The endpoint's context from llama-server's `/props` (beside `/v1`), else the model's `/v1/models` entry; undefined
 * when neither says. Never throws: most servers say nothing. */
export async function discoverContext(
  options: DiscoverOptions,
): Promise<{ tokens: number; source: ContextSource } | undefined> {
  const base = options.baseUrl.replace(/\/+$/, "");
  const props = await getJson(`${base.replace(/\/v1$/, "")}/props`, options);
  const fromProps = contextFromProps(props);
  if (fromProps) return { tokens: fromProps, source: "props" };
  const fromModels = contextFromModels(await getJson(`${base}/models`, options), options.model);
  return fromModels ? { tokens: fromModels, source: "models" } : undefined;
}

async function getJson(url: string, { apiKey, timeoutMs }: DiscoverOptions): Promise<unknown> {
  try {
    const response = await fetch(url, {
      headers: { authorization: `Bearer ${apiKey}`, accept: "application/json" },
      signal: AbortSignal.timeout(timeoutMs),
    });
    return response.ok ? await response.json() : undefined;
  } catch {
    return undefined;
  }
}
