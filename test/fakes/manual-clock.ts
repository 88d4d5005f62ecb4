/**
 * A clock and timers that move only when a test says so, for code that takes `now` and timer
 * functions as dependencies (the scheduler). `advance` fires due timers in time order.
 */
export class ManualClock {
  private current: number;
  private readonly pending = new Map<number, { at: number; fn: () => void }>();
  private nextHandle = 1;

  constructor(start: number | string) {
    this.current = typeof start === "number" ? start : Date.parse(start);
  }

  readonly now = (): number => this.current;

  readonly timers = {
    set: (fn: () => void, ms: number): unknown => {
      const handle = this.nextHandle++;
      this.pending.set(handle, { at: this.current + Math.max(0, ms), fn });
      return handle;
    },
    clear: (handle: unknown): void => {
      this.pending.delete(handle as number);
    },
  };

  /**
   * Moves time forward by `ms`, firing every timer that comes due on the way; after each, lets
   * the work it started settle (the store's promises), so the timer it arms next is seen.
   */
  async advance(ms: number): Promise<void> {
    const end = this.current + ms;
    for (;;) {
      const due = [...this.pending.entries()].filter(([, t]) => t.at <= end).sort((a, b) => a[1].at - b[1].at)[0];
      if (!due) break;
      this.pending.delete(due[0]);
      this.current = Math.max(this.current, due[1].at);
      due[1].fn();
      await this.settle();
    }
    this.current = end;
  }

  /** Lets promise callbacks queued so far run (what a timer's async work needs against SQLite). */
  async settle(): Promise<void> {
    for (let i = 0; i < 3; i++) await new Promise<void>((resolve) => setImmediate(resolve));
  }

  /** Sets the wall clock without firing timers, like a suspended machine or an NTP step. */
  jump(ms: number): void {
    this.current += ms;
  }

  /** When the earliest armed timer fires, if any. */
  get nextTimerAt(): number | undefined {
    const times = [...this.pending.values()].map((t) => t.at);
    return times.length > 0 ? Math.min(...times) : undefined;
  }
}
