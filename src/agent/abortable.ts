/** `work`, or its signal's reason as soon as it is aborted (the work itself goes on unwatched). */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/** Why a turn was cut short when its conversation moved to another process of the cluster. */
export class ConversationMovedError extends Error {
  constructor(sessionKey: string) {
    super(`the conversation ${sessionKey} moved to another process`);
  }
}
