import type { ActivityEvent } from "../../src/bus/types.js";

export interface TypingDeps {
  /** Sends one "typing…" action; Telegram shows it for about 5 seconds. */
  send: (chatId: string, threadId: string | undefined) => Promise<unknown>;
  intervalMs: number;
  /** A turn that ends sooner never shows (nor pays an API call for) the indicator. */
  delayMs: number;
  onError: (err: unknown) => void;
}

/** Keeps "typing…" visible while a turn runs in a chat, by repeating the action until the turn ends. */
export function createTypingIndicator(deps: TypingDeps): {
  onActivity: (event: ActivityEvent) => void;
  stopAll: () => void;
} {
  const timers = new Map<string, NodeJS.Timeout>();
  const send = (event: ActivityEvent) => {
    deps.send(event.chatId, event.threadId).catch(deps.onError);
  };
  const stop = (key: string) => {
    clearInterval(timers.get(key));
    timers.delete(key);
  };
  return {
    onActivity(event) {
      if (!event.busy) return stop(event.sessionKey);
      if (timers.has(event.sessionKey)) return;
      const first = setTimeout(() => {
        send(event);
        timers.set(
          event.sessionKey,
          setInterval(() => send(event), deps.intervalMs),
        );
      }, deps.delayMs);
      timers.set(event.sessionKey, first);
    },
    stopAll() {
      for (const key of [...timers.keys()]) stop(key);
    },
  };
}
