import type { ToolContext } from "../tool.js";
import type { PathScope } from "./safe-open.js";

/** What the file tools need: where they may act, given the turn (its workspace and conversation). */
export interface FileToolDeps {
  scope(ctx: ToolContext): PathScope;
  /** The tool timeout: grep's own hard limit is never longer. */
  searchSeconds?: number;
}
