import { createInterface } from "node:readline";
import type { Logger } from "pino";
import { createConsoleChannel } from "../../channels/console/console-channel.js";
import { createApp } from "../app.js";
import { MAIN_AGENT } from "../bus/types.js";
import type { Config } from "../config/config.js";

// The terminal conversation (the console channel): same agent, tools and memory as the daemon.

/** `--session` and `--agent`: which terminal conversation, of which agent (checked in main.ts). */
type Chat = { chatId: string; agent: string };

/** `pincer agent -m TEXT`: one turn, prints what the agent says; false when the model failed (for the exit code). */
export async function runAgentOnce(config: Config, log: Logger, text: string, chat: Chat): Promise<boolean> {
  // Waits for the MCP servers' first attempts like any first turn, but at most 15 s: a script must not hang on one.
  const app = await createApp(config, { log, waitForModel: false, mcpWaitMs: 15_000 });
  let answered = true;
  const console = createConsoleChannel({
    bus: app.bus,
    ...chat,
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

/** `pincer chat`, interactive. Input is read while a turn runs, so `/stop` and Ctrl-C reach it; lines typed meanwhile
 * wait in the conversation's queue like any chat's. Ctrl-C stops the running turn; a second one quits. */
export async function runChat(config: Config, log: Logger, chat: Chat): Promise<void> {
  const app = await createApp(config, { log });
  const interactive = Boolean(process.stdin.isTTY);
  const terminal = createInterface({ input: process.stdin, output: process.stdout, terminal: interactive });
  // Listened to from now on: readline reads at once, and a piped line it emits while the app starts would be lost.
  const lines = terminal[Symbol.asyncIterator]();
  // The waiting `you:` prompt is erased first (it is drawn again below the answer), or it would show twice.
  const say = (text: string) => process.stdout.write(`${interactive ? "\r\x1b[2K" : ""}${text}\n`);
  // Piped input (a script) gets the answers alone, without prompts between them.
  const prompt = (keepInput = false) => interactive && terminal.prompt(keepInput);
  let busy = false;
  const channel = createConsoleChannel({
    bus: app.bus,
    ...chat,
    write: (msg) => {
      // A spoken reply cannot be played here: the terminal says where its note is.
      const spoken = msg.voice ? `\n(spoken reply, ${msg.voice.seconds} s: ${msg.voice.path})` : "";
      say(`\n${msg.kind === "reply" ? "pincer" : `[${msg.kind}]`}: ${msg.text}${spoken}\n`);
      prompt(true);
    },
    onBusy: (value) => {
      busy = value;
    },
  });
  await app.start([channel]);
  const agent = chat.agent === MAIN_AGENT ? "" : `agent ${chat.agent}, `;
  say(
    `pincer chat — ${agent}model ${config.agents[chat.agent].openai.model}. /help for commands, /stop or Ctrl-C stops a turn, Ctrl-D quits.\n`,
  );
  terminal.setPrompt("you: ");
  prompt();

  const pending = new Set<Promise<void>>();
  const send = (text: string) => {
    const turn = channel.send(text).catch((err: unknown) => log.error({ err }, "could not send the line"));
    pending.add(turn);
    void turn.finally(() => pending.delete(turn));
  };
  let quitting = false;
  let stopAsked = false;
  const interrupt = () => {
    if (busy && !stopAsked) {
      stopAsked = true;
      say("\n(stopping the turn; Ctrl-C again quits)");
      send("/stop");
      return;
    }
    quitting = true;
    terminal.close();
  };
  terminal.on("SIGINT", interrupt);
  process.on("SIGINT", interrupt);

  try {
    for await (const line of lines) {
      if (line.trim() !== "") {
        stopAsked = false;
        send(line);
      }
      prompt();
    }
    // End of input (Ctrl-D, or a script's last line): answer what was asked, unless told to quit.
    if (!quitting) await Promise.all(pending);
  } finally {
    process.off("SIGINT", interrupt);
    await app.stop();
  }
}
