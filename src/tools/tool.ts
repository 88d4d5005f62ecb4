import type { Logger } from "pino";
import type { Switchboard } from "../bus/switchboard.js";
import type { InboundMessage } from "../bus/types.js";
import type { Config } from "../config/config.js";
import type { Store } from "../store/store.js";

/** What tool factories may close over; per-call facts come through ToolContext instead. */
export interface ToolDeps {
  config: Config;
  store: Pick<Store, "jobs" | "conversations" | "memory">;
  /** Re-arms the cron scheduler's timer when the cron tool adds or removes a job. */
  scheduler?: { wake(): void };
  /** The agent's HelperManager, without which there is no spawn tool: `spawn` returns the run id at once, or throws
   * a ToolError when the caps are reached. */
  helpers?: { spawn(origin: InboundMessage, task: string, label?: string): Promise<string> };
}

export interface ToolParameters {
  type: "object";
  properties: Record<string, unknown>;
  required?: string[];
  additionalProperties?: boolean;
}

/** An object schema with these properties (`required` among them) and no others. */
export function objectSchema(required: string[], properties: Record<string, unknown>): ToolParameters {
  return { type: "object", properties, ...(required.length > 0 && { required }), additionalProperties: false };
}

/** An integer parameter of at least `minimum` (and at most `maximum`, when given). */
export const integerParam = (minimum: number, maximum: number | undefined, description: string) =>
  ({ type: "integer", minimum, ...(maximum !== undefined && { maximum }), description }) as const;

/** Everything a tool may touch during one call; passed in, never imported. */
export interface ToolContext {
  sessionKey: string;
  /** The message that started this turn: its channel, chat and thread are where answers go. */
  inbound: InboundMessage;
  workspace: string;
  /** Folders outside `workspace` a person's space reaches (access/roles.ts sharedRoots). */
  shared?: { read: string[]; write: string[] };
  /** Whether this run may see its space's MEMORY.md (access/policy.ts seesOwnerMemory). */
  seesOwnerMemory: boolean;
  /** Aborted by /stop, by the tool timeout, or when pincer shuts down. */
  signal: AbortSignal;
  bus: Switchboard;
  log: Logger;
  /** Texts this turn already delivered to its own conversation (message tool), so the answer is not sent twice. */
  sentToConversation?: string[];
}

/** A tool the model can call. Only `readOnly` tools run concurrently; the rest (exec too) run alone. */
export interface Tool<Args = Record<string, unknown>> {
  readonly name: string;
  readonly description: string;
  readonly parameters: ToolParameters;
  readonly readOnly?: boolean;
  /** Safe to run again when a crash cut a run short (read-only tools are); the rest get an "interrupted" error. */
  readonly repeatable?: boolean;
  /** Runs outside pincer's control (an MCP server not marked `trusted`): runs nobody watches do not get it. */
  readonly untrusted?: boolean;
  /** Seconds before the registry gives up on the call (default: agent.toolTimeoutSeconds). */
  readonly timeoutSeconds?: number;
  /** Returns the text the model sees. Throwing is fine: the registry turns it into `Error: …`. */
  execute(args: Args, ctx: ToolContext): Promise<string>;
}

/** A tool's failure that should reach the model verbatim, without a stack trace. */
export class ToolError extends Error {}
