import { createCronTool } from "./cron-tool.js";
import { createExecTool } from "./exec/exec-tool.js";
import { createFileTools } from "./files/index.js";
import { createMemorySearchTool } from "./memory-search.js";
import { createMessageTool } from "./message-tool.js";
import { createSpawnTool } from "./spawn-tool.js";
import type { Tool, ToolDeps } from "./tool.js";
import { createWebTools } from "./web/index.js";

export type { ToolDeps };

/** Every tool offered to the model. A tool is listed here only once it works. */
export function createTools(deps: ToolDeps): Tool[] {
  return [
    createExecTool(deps),
    ...createFileTools(deps.config),
    createCronTool(deps),
    createMessageTool(deps),
    ...(deps.helpers ? [createSpawnTool(deps.helpers)] : []),
    ...createWebTools(deps.config),
    createMemorySearchTool(deps),
  ];
}
