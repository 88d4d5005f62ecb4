import type { Logger } from "pino";
import { createConsoleChannel } from "../../channels/console/console-channel.js";
import { createApp } from "../app.js";
import type { Config } from "../config/config.js";

/** `pincer agent -m TEXT`: one turn in the terminal conversation; prints what the agent says. */
export async function runAgentOnce(config: Config, log: Logger, text: string, session: string): Promise<void> {
  const app = createApp(config, { log });
  const console = createConsoleChannel({
    bus: app.bus,
    chatId: session,
    write: (msg) => process.stdout.write(`${msg.text}\n`),
  });
  await app.start([console]);
  try {
    await console.send(text);
  } finally {
    await app.stop();
  }
}
