import type { ErrorObject, ValidateFunction } from "ajv";
import { distance } from "fastest-levenshtein";
import { untilAborted } from "../bus/until-stored.js";
import type { ToolSchema } from "../llm/model.js";
import { capToolResult, DEFAULT_MAX_RESULT_CHARS } from "./result-cap.js";
import { SchemaCompiler } from "./schema-compiler.js";
import { type Tool, type ToolContext, ToolError } from "./tool.js";

interface Entry {
  tool: Tool;
  validate?: ValidateFunction;
  /** Made once: the same object every turn lets its token count be remembered. */
  schema?: ToolSchema;
}

/** Holds the tools offered to the model and runs one call, turning every failure into `Error: …`. */
export class ToolRegistry {
  private readonly entries = new Map<string, Entry>();
  /** Tools left out of a restricted view, with the reason a call to them gets. */
  private readonly withheld = new Map<string, string>();

  constructor(
    private readonly defaultTimeoutSeconds = 120,
    private readonly maxResultChars = DEFAULT_MAX_RESULT_CHARS,
    private readonly schemas = new SchemaCompiler(),
  ) {}

  /** Its schema is compiled on its first call, or here with `compileNow` (an MCP server's: may throw, adding nothing). */
  register(tool: Tool, options: { compileNow?: boolean } = {}): this {
    if (this.entries.has(tool.name)) throw new Error(`tool ${tool.name} is registered twice`);
    const validate = options.compileNow ? this.schemas.compile(tool.parameters) : undefined;
    this.entries.set(tool.name, { tool, validate });
    return this;
  }

  /** A view without the tools of untrusted MCP servers, for runs nobody watches (scheduled runs, helpers). */
  withoutUntrusted(): ToolRegistry {
    return this.restricted(
      (name) => !this.get(name)?.untrusted,
      (name) =>
        `${name} belongs to an MCP server not marked "trusted", and runs nobody watches do not use those; answer without it.`,
    );
  }

  unregister(name: string): void {
    this.entries.delete(name);
  }

  /** A view of the tools `keep` accepts (same validators); a call to another returns `Error: <reason>`, or unknown. */
  restricted(keep: (name: string) => boolean, reason?: (name: string) => string): ToolRegistry {
    const view = new ToolRegistry(this.defaultTimeoutSeconds, this.maxResultChars, this.schemas);
    // A view of a view keeps the first one's reasons.
    for (const [name, why] of this.withheld) view.withheld.set(name, why);
    for (const [name, entry] of this.entries) {
      if (keep(name)) view.entries.set(name, entry);
      else if (reason) view.withheld.set(name, reason(name));
    }
    return view;
  }

  get(name: string): Tool | undefined {
    return this.entries.get(name)?.tool;
  }

  get names(): string[] {
    return [...this.entries.keys()];
  }

  /** Whether a call cut short by a crash may simply run again (see Tool.repeatable). */
  isRepeatable(name: string): boolean {
    const tool = this.get(name);
    return Boolean(tool?.repeatable ?? tool?.readOnly);
  }

  /** Only read-only tools may share a batch; unknown names run alone. */
  isReadOnly(name: string): boolean {
    return Boolean(this.get(name)?.readOnly);
  }

  /** In a fixed order, whatever order MCP servers (re)connect in, so the prompt's tools stay byte for byte the same:
   * built-in tools as registered, then MCP tools by name. */
  toSchemas(): ToolSchema[] {
    const entries = [...this.entries.values()];
    const isMcp = (entry: (typeof entries)[number]) => entry.tool.name.startsWith("mcp_");
    const mcp = entries.filter(isMcp).sort((a, b) => (a.tool.name < b.tool.name ? -1 : 1));
    return [...entries.filter((entry) => !isMcp(entry)), ...mcp].map((entry) => {
      const { name, description, parameters } = entry.tool;
      entry.schema ??= { type: "function", function: { name, description, parameters: { ...parameters } } };
      return entry.schema;
    });
  }

  /** Runs one call from the model. Never throws: failures come back as `Error: …`; long results are cut. */
  async execute(name: string, rawArgs: string, ctx: ToolContext): Promise<string> {
    return capToolResult(await this.run(name, rawArgs, ctx), this.maxResultChars);
  }

  private async run(name: string, rawArgs: string, ctx: ToolContext): Promise<string> {
    // Models and servers send calls without a name (null, missing); the types cannot promise it.
    if (typeof name !== "string" || name.trim() === "") {
      return `Error: the tool call names no tool. Available tools: ${this.names.join(", ")}.`;
    }
    const entry = this.entries.get(name);
    if (this.withheld.has(name)) return `Error: ${this.withheld.get(name)}`;
    if (!entry) return `Error: unknown tool "${name}".${this.suggest(name)}`;
    let args: unknown;
    try {
      args = typeof rawArgs !== "string" ? rawArgs : rawArgs.trim() === "" ? {} : JSON.parse(rawArgs);
    } catch (err) {
      return `Error: the arguments for ${name} are not valid JSON (${(err as Error).message}).`;
    }
    try {
      // Views share the entry, so a schema is compiled once whichever view calls first.
      entry.validate ??= this.schemas.compile(entry.tool.parameters);
    } catch (err) {
      return `Error: ${name} cannot check its arguments (${(err as Error).message}).`;
    }
    let valid: boolean;
    try {
      valid = entry.validate(args);
    } catch (err) {
      // A recursive schema is checked by recursion: arguments nested thousands deep overflow the stack.
      return `Error: the arguments for ${name} could not be checked (${(err as Error).message}).`;
    }
    if (!valid) return `Error: invalid arguments for ${name}: ${formatAjvErrors(entry.validate.errors)}.`;
    const seconds = entry.tool.timeoutSeconds ?? this.defaultTimeoutSeconds;
    const timeout = AbortSignal.timeout(seconds * 1000);
    const signal = AbortSignal.any([ctx.signal, timeout]);
    try {
      return String(
        await untilAborted(entry.tool.execute(args as Record<string, unknown>, { ...ctx, signal }), signal),
      );
    } catch (err) {
      if (timeout.aborted) return `Error: ${name} timed out after ${seconds} s.`;
      if (ctx.signal.aborted) return `Error: ${name} was cancelled.`;
      if (err instanceof ToolError) return `Error: ${err.message}`;
      ctx.log.warn({ err, tool: name }, "tool failed");
      return `Error: ${name} failed: ${(err as Error)?.message ?? String(err)}`;
    }
  }

  private suggest(name: string): string {
    const close = this.names
      .map((candidate) => ({ candidate, d: distance(name.toLowerCase(), candidate) }))
      .filter(({ d }) => d <= Math.max(2, Math.floor(name.length / 3)))
      .sort((a, b) => a.d - b.d)
      .slice(0, 3)
      .map(({ candidate }) => candidate);
    return close.length > 0 ? ` Did you mean: ${close.join(", ")}?` : ` Available tools: ${this.names.join(", ")}?`;
  }
}

function formatAjvErrors(errors: ErrorObject[] | null | undefined): string {
  return (errors ?? [])
    .map((e) => {
      const where = e.instancePath ? e.instancePath.slice(1).replaceAll("/", ".") : "arguments";
      if (e.keyword === "additionalProperties") {
        return `${where} has an unexpected property "${(e.params as { additionalProperty: string }).additionalProperty}"`;
      }
      return `${where} ${e.message}`;
    })
    .join("; ");
}
