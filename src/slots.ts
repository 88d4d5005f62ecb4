/** At most `size` holders at a time; the others wait in arrival order, each until its signal gives up. */
export class Slots {
  private used = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly size: number) {}

  /** Resolves with the release once a slot is free; rejects with the signal's reason if it aborts first. */
  async acquire(signal: AbortSignal): Promise<() => void> {
    signal.throwIfAborted();
    if (this.used >= this.size) {
      await new Promise<void>((resolve, reject) => {
        const turn = () => {
          signal.removeEventListener("abort", giveUp);
          resolve();
        };
        const giveUp = () => {
          this.waiting.splice(this.waiting.indexOf(turn), 1);
          reject(signal.reason);
        };
        this.waiting.push(turn);
        signal.addEventListener("abort", giveUp, { once: true });
      });
    } else this.used++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      // The slot passes straight to the next in line, or is given back.
      const next = this.waiting.shift();
      if (next) next();
      else this.used--;
    };
  }
}
