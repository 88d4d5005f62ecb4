import type { Logger } from "pino";
import type { Model } from "../llm/model.js";
import type { ReadCacheOptions } from "../tools/files/read-cache.js";
import type { Timing } from "../tools/mcp/connection.js";

export interface AppOptions {
  log: Logger;
  /** Instead of the configured endpoint (benchmarks). */
  model?: Model;
  now?: () => Date;
  mcpTiming?: Partial<Timing>;
  /** Only the daemon writes one, for `pincer status`. */
  mcpStatusFile?: string;
  /** False for one-shot commands: a message fails instead of waiting for the model to come back. */
  waitForModel?: boolean;
  readCache?: ReadCacheOptions;
  /** The most the first turns wait for the MCP servers' first attempts (default: their connect timeout). */
  mcpWaitMs?: number;
}
