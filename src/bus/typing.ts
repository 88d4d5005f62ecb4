import type { ActivityEvent } from "./types.js";

/** Keeps "typing…" visible in a chat (or thread) while a turn runs there, repeating the platform's action before it
 * fades; a turn that ends within `delayMs` never pays for one. Turns are counted per chat, so two conversations
 * answering in one chat (a helper's report beside the chat's own turn) don't stop each other's indicator. */
export function typingIndicator(deps: {
  send: (chatId: string, threadId: string | undefined) => Promise<unknown>;
  onError: (err: unknown) => void;
  intervalMs: number;
  delayMs: number;
}) {
  const active = new Map<string, { turns: number; timer: NodeJS.Timeout }>();
  const ping = (event: ActivityEvent) => void deps.send(event.chatId, event.threadId).catch(deps.onError);
  return {
    onActivity(event: ActivityEvent): void {
      const key = `${event.chatId}:${event.threadId ?? ""}`;
      const entry = active.get(key);
      if (event.busy && entry) entry.turns++;
      else if (event.busy) {
        const timer = setTimeout(() => {
          ping(event);
          started.timer = setInterval(() => ping(event), deps.intervalMs);
        }, deps.delayMs);
        const started = { turns: 1, timer };
        active.set(key, started);
      } else if (entry && --entry.turns <= 0) {
        clearInterval(entry.timer);
        active.delete(key);
      }
    },
    stopAll(): void {
      for (const { timer } of active.values()) clearInterval(timer);
      active.clear();
    },
  };
}
