import type { ToolCall } from "../llm/reply.js";
import { parseJson } from "../llm/text-tool-calls.js";

/** A short note of what a round of tool calls does, e.g. "⏳ Working: exec `npm test`, read_file ×3". */
export function describeToolRound(calls: ToolCall[]): string {
  const counts = new Map<string, number>();
  for (const call of calls) counts.set(call.name, (counts.get(call.name) ?? 0) + 1);
  const parts = [...counts].map(([name, count]) => {
    const alone = count === 1 ? calls.find((c) => c.name === name) : undefined;
    const line = alone && execCommand(alone)?.split("\n")[0].replaceAll("`", "'").trim();
    if (line) return `exec \`${line.length > 60 ? `${line.slice(0, 59)}…` : line}\``;
    return count > 1 ? `${name} ×${count}` : name;
  });
  return `⏳ Working: ${parts.join(", ")}`;
}

export function execCommand({ name, arguments: args }: { name: string; arguments: string }): string | undefined {
  const command = name === "exec" ? (parseJson(args) as { command?: unknown } | undefined)?.command : undefined;
  return typeof command === "string" ? command : undefined;
}

/** The progress note of one turn: a round of tool calls still running after `afterMs` (never when undefined) shows
 * it, so quick turns never do; once up, every later round updates it at once (edited in place); `finish` clears it. */
export class ProgressReporter {
  private timer: NodeJS.Timeout | undefined;
  private shown = "";

  constructor(
    private readonly publish: (text: string) => void,
    private readonly afterMs: number | undefined,
  ) {}

  roundStarted(calls: ToolCall[]): () => void {
    if (this.afterMs === undefined) return () => {};
    const text = describeToolRound(calls);
    clearTimeout(this.timer);
    if (this.shown) this.show(text);
    else this.timer = setTimeout(() => this.show(text), this.afterMs);
    return () => clearTimeout(this.timer);
  }

  finish(): void {
    clearTimeout(this.timer);
    this.show("");
  }

  private show(text: string): void {
    if (text === this.shown) return;
    this.shown = text;
    this.publish(text);
  }
}
