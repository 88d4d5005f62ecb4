import type { ActivityEvent } from "../../src/bus/types.js";

/** Discord shows "typing…" for about 10 s after each request, so it is refreshed a little sooner. */
export const TYPING_REFRESH_MS = 8_000;
/** A turn that ends sooner never shows (nor pays an API call for) the indicator. */
export const TYPING_DELAY_MS = 400;

/**
 * Keeps "typing…" visible in a channel (or thread) while a turn runs there. Turns are counted
 * per channel so that two conversations sharing a channel don't stop each other's indicator.
 */
export function createTypingIndicator(deps: {
  sendTyping: (channelId: string) => Promise<unknown>;
  onError: (err: unknown, channelId: string) => void;
  intervalMs?: number;
  /** How long a turn runs before "typing…" is first shown: quick answers need none. */
  delayMs?: number;
}) {
  const active = new Map<string, { turns: number; timer: NodeJS.Timeout }>();
  const ping = (channelId: string) => {
    deps.sendTyping(channelId).catch((err: unknown) => deps.onError(err, channelId));
  };

  return {
    onActivity(event: ActivityEvent): void {
      const channelId = event.threadId ?? event.chatId;
      const entry = active.get(channelId);
      if (event.busy) {
        if (entry) {
          entry.turns++;
          return;
        }
        const started = {
          turns: 1,
          timer: setTimeout(() => {
            ping(channelId);
            started.timer = setInterval(() => ping(channelId), deps.intervalMs ?? TYPING_REFRESH_MS);
          }, deps.delayMs ?? TYPING_DELAY_MS),
        };
        active.set(channelId, started);
      } else if (entry && --entry.turns <= 0) {
        clearInterval(entry.timer);
        active.delete(channelId);
      }
    },
    stopAll(): void {
      for (const { timer } of active.values()) clearInterval(timer);
      active.clear();
    },
  };
}
