import { createInterface } from "node:readline";
import type { Logger } from "pino";
import { createConsoleChannel } from "../../channels/console/console-channel.js";
import { createApp } from "../app.js";
import type { Config } from "../config/config.js";

/** `pincer chat`: the console channel, interactive. Same agent, tools and memory as the daemon. */
export async function runChat(config: Config, log: Logger, session: string): Promise<void> {
  const app = createApp(config, { log });
  const terminal = createInterface({ input: process.stdin, output: process.stdout, terminal: process.stdin.isTTY });
  const channel = createConsoleChannel({
    bus: app.bus,
    chatId: session,
    write: (msg) => process.stdout.write(`\n${msg.kind === "reply" ? "pincer" : `[${msg.kind}]`}: ${msg.text}\n\n`),
  });
  await app.start([channel]);
  process.stdout.write(`pincer chat — model ${config.openai.model}. /help for commands, Ctrl-D to quit.\n\n`);
  terminal.setPrompt("you: ");
  terminal.prompt();
  try {
    // Lines typed during a turn wait in readline's buffer and go in order once it ends.
    for await (const line of terminal) {
      if (line.trim() !== "") await channel.send(line);
      terminal.prompt();
    }
  } finally {
    terminal.close();
    await app.stop();
  }
}
