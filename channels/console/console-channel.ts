import { randomUUID } from "node:crypto";
import type { Channel } from "../../src/bus/channel.js";
import { parseCommand } from "../../src/bus/commands.js";
import type { Switchboard } from "../../src/bus/switchboard.js";
import { agentSessionKey, type Button, MAIN_AGENT, type OutboundMessage, sessionKeyOf } from "../../src/bus/types.js";

export interface ConsoleChannel extends Channel {
  /** Publishes one line the user typed; resolves when its turn has ended. */
  send(text: string): Promise<void>;
}

/** The terminal as a channel: the same bus contract as Telegram and Discord, minus the network. */
export function createConsoleChannel(deps: {
  bus: Switchboard;
  chatId?: string; // `pincer chat` and `pincer agent` share "local" by default
  agent?: string; // whose conversation it is (`--agent`): main's by default
  write: (msg: OutboundMessage) => void;
  onBusy?: (busy: boolean) => void;
}): ConsoleChannel {
  const chatId = deps.chatId ?? "local";
  const sessionKey = agentSessionKey(deps.agent ?? MAIN_AGENT, sessionKeyOf("console", chatId));
  // Turns end with an activity event; /stop, /status and /help are answered without a turn.
  const turnEnded: Array<() => void> = [];
  const commandAnswered: Array<() => void> = [];
  let unsubscribeActivity = () => {};
  // Messages with buttons still to answer, oldest first: a line naming a button's key taps it.
  const open: Array<{ messageId: string; buttons: Button[] }> = [];
  let posted = 0;
  const from = () => ({
    id: randomUUID(),
    channel: "console" as const,
    chatId,
    senderId: "console",
    senderName: "you",
    isGroup: false,
    receivedAt: Date.now(),
  });

  return {
    name: "console",
    async start() {
      unsubscribeActivity = deps.bus.onActivity("console", (event) => {
        if (event.chatId !== chatId) return;
        deps.onBusy?.(event.busy);
        // The turn is over once its reply is in the outbox; the sender writes it a moment later.
        if (!event.busy) void deps.bus.outboundIdle("console").then(turnEnded.shift());
      });
      await deps.bus.subscribeOutbound("console", async (msg) => {
        // Progress notes are for chats; the terminal shows that a turn is busy by itself.
        if (msg.chatId !== chatId || msg.kind === "progress") return;
        const messageId = `console-${++posted}`;
        const edited = msg.editOf && "messageId" in msg.editOf ? msg.editOf.messageId : undefined;
        const at = open.findIndex((m) => m.messageId === edited);
        if (at >= 0) open.splice(at, 1);
        const buttons = msg.buttons?.flat() ?? [];
        if (buttons.length > 0) open.push({ messageId, buttons });
        const keys = keysOf(buttons);
        const choices = buttons.map((b, i) => `[${keys[i]}] ${b.label}`).join("  ");
        deps.write(buttons.length > 0 ? { ...msg, text: `${msg.text}\n${choices}` } : msg);
        if (msg.kind === "notice") commandAnswered.shift()?.();
        return { messageIds: [messageId] };
      });
    },
    async stop() {
      unsubscribeActivity();
      await deps.bus.unsubscribeOutbound("console");
    },
    async send(text) {
      const asked = open[0];
      const button = asked?.buttons[keysOf(asked.buttons).indexOf(text.trim().toLowerCase())];
      if (asked && button) {
        open.shift();
        const answer = await deps.bus.publishTap({ ...from(), messageId: asked.messageId, ...button });
        if (answer.text) deps.write({ channel: "console", chatId, kind: "notice", text: answer.text });
        return;
      }
      const command = parseCommand(text);
      const instant = command !== undefined && command !== "new";
      const ended = new Promise<void>((resolve) => (instant ? commandAnswered : turnEnded).push(resolve));
      await deps.bus.publishInbound({ ...from(), text, media: [], mentionsBot: true, sessionKey });
      return ended;
    },
  };
}

/** The keys that tap a message's buttons: y, a and n for an approval's three, else 1, 2, 3… */
function keysOf(buttons: Button[]): string[] {
  const approval = buttons.length === 3 && buttons.every((b) => b.data.startsWith("a:"));
  return approval ? ["y", "a", "n"] : buttons.map((_, i) => String(i + 1));
}
