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

  /** Moves time forward by `ms`, firing every timer that comes due on the way. */
  advance(ms: number): void {
    const end = this.current + ms;
    for (;;) {
      const due = [...this.pending.entries()].filter(([, t]) => t.at <= end).sort((a, b) => a[1].at - b[1].at)[0];
      if (!due) break;
      this.pending.delete(due[0]);
      this.current = Math.max(this.current, due[1].at);
      due[1].fn();
    }
    this.current = end;
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
