import type { PathScope } from "./workspace-path.js";

/** What the file tools need: where they may act, given the turn's workspace. */
export interface FileToolDeps {
  scope(workspace: string): PathScope;
  /** The tool timeout: grep's own hard limit is never longer. */
  searchSeconds?: number;
}
