import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach } from "vitest";
import type { App } from "../../src/app.js";
import type { Config } from "../../src/config/config.js";
import { recordingChannel, tempHome, testApp, userMessage } from "./app.js";
import { type Exchange, type LlamaBuild, type LlamaServer, startLlamaServer } from "./llama-server.js";
import { until } from "./until.js";

/** What notes.txt in the workspace says: the tiny model's read_file call asks for it. */
export const NOTES = "The shed key is under the blue flower pot.";

export interface LlamaChat {
  app: App;
  /** Sends `text` to console chat `chat` and resolves to the next message pincer sends back there. */
  say(chat: string, text: string, ms?: number): Promise<string>;
  /** Everything pincer sent to `chat`. */
  sent(chat: string): string[];
  stop(): Promise<void>;
}

/**
 * pincer (the real app, worker and openai client) against a llama-server, with notes.txt in the
 * workspace. Replies are awaited on a deadline long enough for a babbling model on a busy machine.
 */
export async function chatWithLlama(server: LlamaServer, adjust?: (config: Config) => void): Promise<LlamaChat> {
  const home = tempHome("pincer-llama-");
  mkdirSync(join(home, "workspace"), { recursive: true });
  writeFileSync(join(home, "workspace/notes.txt"), `${NOTES}\n`);
  const app = await testApp(server.url, home, {}, adjust);
  const channel = recordingChannel(app);
  await app.start([channel]);
  const sent = (chat: string) => channel.sent.filter((m) => m.chatId === chat).map((m) => m.text ?? "");
  return {
    app,
    sent,
    async say(chat, text, ms = 50_000) {
      const before = sent(chat).length;
      await app.bus.publishInbound(userMessage(chat, text));
      return until(
        () => sent(chat)[before],
        `pincer's answer to "${text}"`,
        ms,
        () => `llama-server said:\n${server.output.join("").slice(-3000)}`,
      );
    },
    stop: () => app.stop(),
  };
}

/** The exchanges whose last user message contains `text`. */
export function exchangesAbout(server: LlamaServer, text: string): Exchange[] {
  return server.exchanges.filter((e) =>
    String(e.body.messages.filter((m) => m.role === "user").at(-1)?.content ?? "").includes(text),
  );
}

/** Every assistant message pincer sent back as history, as JSON text (content and tool calls). */
export function assistantHistory(server: LlamaServer): string {
  return server.exchanges
    .flatMap((e) => e.body.messages.filter((m) => m.role === "assistant"))
    .map((m) => JSON.stringify(m))
    .join("\n");
}

/** pincer's own tools; a new one left on would only make a small-context test fail loudly. */
const BUILT_IN_TOOLS = [
  ...["cron", "edit_file", "exec", "glob", "grep", "list_dir", "memory_search"],
  ...["message", "read_file", "spawn", "web_fetch", "web_search", "write_file"],
];

/** Turns off every built-in tool but `keep`: pincer's prompt then fits llama-server's -c 2048. */
export function onlyTools(...keep: string[]): (config: Config) => void {
  return (config) => {
    config.agent.disabledTools = BUILT_IN_TOOLS.filter((name) => !keep.includes(name));
  };
}

/**
 * A llama-server with `flags` and pincer talking to it, for one test: call at the top of a file or
 * describe block; what a test starts is stopped after it.
 */
export function llamaPerTest(
  build: LlamaBuild | undefined,
): (flags: string[], adjust?: (config: Config) => void) => Promise<{ server: LlamaServer; chat: LlamaChat }> {
  const running: Array<{ server: LlamaServer; chat?: LlamaChat }> = [];
  afterEach(async () => {
    for (const { server, chat } of running.splice(0)) {
      await chat?.stop();
      await server.stop();
    }
  });
  return async (flags, adjust) => {
    if (!build) throw new Error("no llama-server build: guard the tests with describe.skipIf(!build)");
    const started: { server: LlamaServer; chat?: LlamaChat } = { server: await startLlamaServer(build, flags) };
    running.push(started);
    started.chat = await chatWithLlama(started.server, adjust);
    return { server: started.server, chat: started.chat };
  };
}
