import { createCronTool } from "./cron-tool.js";
import { createExecTool } from "./exec/exec-tool.js";
import { createFileTools } from "./files/index.js";
import { createMemorySearchTool } from "./memory-search.js";
import { createMessageTool } from "./message-tool.js";
import { createSpawnTool } from "./spawn-tool.js";
import type { Tool, ToolDeps } from "./tool.js";
import { compilePolicy } from "./web/address-policy.js";
import { createWebFetchTool } from "./web/web-fetch-tool.js";
import { createWebSearchTool } from "./web/web-search-tool.js";

/** Every tool offered to the model. A tool is listed here only once it works. */
export function createTools(deps: ToolDeps): Tool[] {
  const { web } = deps.config;
  const { provider, baseUrl } = web.search ?? {};
  return [
    createExecTool(deps),
    ...createFileTools(deps.config),
    createCronTool(deps),
    createMessageTool(deps),
    ...(deps.helpers ? [createSpawnTool(deps.helpers)] : []),
    createWebFetchTool({ ...web, policy: compilePolicy(web.allow) }),
    // Not without a provider: a tool that can only say "not configured" is not offered.
    ...(provider && baseUrl ? [createWebSearchTool({ ...web.search, provider, baseUrl })] : []),
    createMemorySearchTool(deps),
  ];
}
