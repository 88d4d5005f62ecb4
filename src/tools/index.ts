import type { Logger } from "pino";
import type { Config } from "../config/config.js";
import { mediaDir } from "../paths.js";
import type { Store } from "../store/store.js";
import { createCronTool } from "./cron-tool.js";
import { createExecTool } from "./exec/exec-tool.js";
import { createFileTools } from "./files/index.js";
import { createMemorySearchTool } from "./memory-search.js";
import { createMessageTool } from "./message-tool.js";
import { createSpawnTool, type Spawner } from "./spawn-tool.js";
import type { Tool } from "./tool.js";
import { createWebTools } from "./web/index.js";

/** What tool factories may close over; per-call facts come through ToolContext instead. */
export interface ToolDeps {
  config: Config;
  store: Pick<Store, "jobs" | "conversations" | "memory">;
  log: Logger;
  /** Re-arms the cron scheduler's timer when the cron tool adds or removes a job. */
  scheduler?: { wake(): void };
  /** Runs background helpers; without it there is no spawn tool. */
  helpers?: Spawner;
}

/** Every tool offered to the model. A tool is listed here only once it works. */
export function createTools(deps: ToolDeps): Tool[] {
  return [
    createExecTool({ config: deps.config }),
    ...createFileTools(deps.config),
    createCronTool({
      store: deps.store.jobs,
      timezone: deps.config.timezone,
      minEverySeconds: deps.config.cron.minEverySeconds,
      wake: () => deps.scheduler?.wake(),
    }),
    createMessageTool({
      allowedTargets: deps.config.message.allowedTargets,
      home: deps.config.home,
      mediaDir: mediaDir(deps.config.home),
      maxBytes: deps.config.media.maxBytes,
      conversations: deps.store.conversations,
    }),
    ...(deps.helpers ? [createSpawnTool(deps.helpers)] : []),
    ...createWebTools(deps.config),
    createMemorySearchTool({
      store: deps.store.memory,
      timezone: deps.config.timezone,
    }),
  ];
}
