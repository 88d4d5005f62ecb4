import type { Logger } from "pino";
import { createConsoleChannel } from "../../channels/console/console-channel.js";
import { createApp } from "../app.js";
import type { Config } from "../config/config.js";

/**
 * `pincer agent -m TEXT`: one turn in the terminal conversation; prints what the agent says.
 * Resolves to false when the turn could not be answered (the model failed), for the exit code.
 */
export async function runAgentOnce(config: Config, log: Logger, text: string, session: string): Promise<boolean> {
  // One turn and out: it waits for the MCP servers' first connection attempts like any first turn,
  // but at most 15 s (a server that never answers must not hold a script up for its full timeout).
  const app = await createApp(config, { log, waitForModel: false, mcpWaitMs: 15_000 });
  let answered = true;
  const console = createConsoleChannel({
    bus: app.bus,
    chatId: session,
    write: (msg) => {
      if (msg.failed) answered = false;
      (msg.failed ? process.stderr : process.stdout).write(`${msg.text}\n`);
    },
  });
  await app.start([console]);
  try {
    await console.send(text);
  } finally {
    await app.stop();
  }
  return answered;
}
