import type { Logger } from "pino";
import type { Config } from "../config/config.js";
import type { Database } from "../store/database.js";
import type { Tool } from "./tool.js";

/** What tool factories may close over; per-call facts come through ToolContext instead. */
export interface ToolDeps {
  config: Config;
  db: Database;
  log: Logger;
}

/** Every tool offered to the model. A tool is listed here only once it works. */
export function createTools(_deps: ToolDeps): Tool[] {
  return [];
}
