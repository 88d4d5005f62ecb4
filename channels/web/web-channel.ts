import { randomUUID } from "node:crypto";
import { withButtonLines } from "../../src/bus/buttons.js";
import type { Channel } from "../../src/bus/channel.js";
import type { Switchboard } from "../../src/bus/switchboard.js";
import { agentOf, agentSessionKey, MAIN_AGENT, type OutboundMessage, sessionKeyOf } from "../../src/bus/types.js";

/** Something for an open page: a message the agent sent, or a turn starting or ending. */
export type WebChatEvent =
  | {
      chatId: string;
      type: "message";
      kind: "reply" | "progress" | "notice";
      text: string;
      at: number;
      /** A spoken reply's note, fetched by its id (`voiceNote`); its length in seconds. */
      audio?: { id: string; seconds: number };
    }
  | { chatId: string; type: "busy"; busy: boolean };

export interface WebChannel extends Channel {
  /** Publishes what the page's user typed into conversation `web:<chatId>`, an agent's when `chatId` is `AGENT/ID` (as
   * every event names its chat); false for a replay. */
  send(chatId: string, text: string, senderName?: string): Promise<boolean>;
  listen(listener: (event: WebChatEvent) => void): () => void;
  /** The file of a spoken reply sent to `chatId` lately, by the id its event gave; undefined for any other. */
  voiceNote(chatId: string, id: string): string | undefined;
}

/** Spoken replies a page may still fetch (the newest ones; older ones are in the conversation's text). */
const KEPT_NOTES = 50;

/** A web chat id as it may appear in `web:<id>` and in the page's address. */
const WEB_CHAT_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** The control page's chat box: what the owner types goes through the bus like any chat's message (same queue,
 * commands, tools, memory); what the agent sends back goes to the open pages. Access is the page's token. */
export function createWebChannel({ bus }: { bus: Switchboard }): WebChannel {
  const listeners = new Set<(event: WebChatEvent) => void>();
  const emit = (event: WebChatEvent) => {
    for (const listener of listeners) listener(event);
  };
  let offActivity = () => {};
  const notes = new Map<string, { chatId: string; path: string }>();
  let started = false;
  let stopFollowing: (() => void) | undefined;
  const show = (msg: OutboundMessage) => {
    const chatId = agentSessionKey(msg.agent ?? MAIN_AGENT, msg.chatId);
    const audio = msg.voice && { id: randomUUID(), seconds: msg.voice.seconds };
    if (audio && msg.voice) {
      notes.set(audio.id, { chatId, path: msg.voice.path });
      for (const old of [...notes.keys()].slice(0, Math.max(0, notes.size - KEPT_NOTES))) notes.delete(old);
    }
    const text = withButtonLines(msg);
    emit({ chatId, type: "message", kind: msg.kind, text, at: Date.now(), ...(audio && { audio }) });
  };
  return {
    name: "web",
    status: () => ({ state: started ? "connected" : "stopped" }),
    async start() {
      started = true;
      offActivity = bus.onActivity("web", (event) =>
        emit({ chatId: agentSessionKey(agentOf(event.sessionKey), event.chatId), type: "busy", busy: event.busy }),
      );
      // The pages hear every reply through followOutbound (in listen), on every process of a cluster: the sender, run
      // by the one process holding the web role, only marks each row sent. With no page open the reply is still stored
      // in the conversation; the page shows it on load.
      await bus.subscribeOutbound("web", async () => {});
    },
    async stop() {
      started = false;
      offActivity();
      await bus.unsubscribeOutbound("web");
    },
    send(chat, text, senderName = "owner") {
      const [, agent = MAIN_AGENT, chatId = ""] = /^(?:([^/]+)\/)?([^/]*)$/.exec(chat) ?? [];
      if (!WEB_CHAT_ID.test(chatId)) throw new Error(`invalid web chat id "${chat}"`);
      return bus.publishInbound({
        id: randomUUID(),
        channel: "web",
        chatId,
        senderId: "owner",
        senderName,
        text,
        media: [],
        isGroup: false,
        mentionsBot: true,
        receivedAt: Date.now(),
        sessionKey: agentSessionKey(agent, sessionKeyOf("web", chatId)),
      });
    },
    voiceNote(chatId, id) {
      const note = notes.get(id);
      return note?.chatId === chatId ? note.path : undefined;
    },
    listen(listener) {
      listeners.add(listener);
      stopFollowing ??= bus.followOutbound("web", show);
      return () => {
        listeners.delete(listener);
        if (listeners.size > 0) return;
        stopFollowing?.();
        stopFollowing = undefined;
      };
    },
  };
}
