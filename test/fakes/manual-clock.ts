import { vi } from "vitest";

/**
 * Time that moves only when a test says so: vitest's fake setTimeout and Date, with the armed timers' due times
 * kept so a test can ask when the next one fires. `advance` fires due timers in time order; `dispose` (afterEach)
 * gives the real timers back.
 */
export class ManualClock {
  private readonly pending = new Map<unknown, number>();
  private readonly fakes: Pick<typeof globalThis, "setTimeout" | "clearTimeout">;

  constructor(start: number | string) {
    vi.useFakeTimers({
      now: typeof start === "number" ? start : Date.parse(start),
      toFake: ["setTimeout", "clearTimeout", "Date"],
    });
    const { setTimeout: fakeSet, clearTimeout: fakeClear } = globalThis;
    this.fakes = { setTimeout: fakeSet, clearTimeout: fakeClear };
    const pending = this.pending;
    globalThis.setTimeout = ((fn: () => void, ms = 0) => {
      const handle = fakeSet(() => {
        pending.delete(handle);
        fn();
      }, ms);
      pending.set(handle, Date.now() + Math.max(0, ms));
      return handle;
    }) as typeof setTimeout;
    globalThis.clearTimeout = ((handle?: NodeJS.Timeout) => {
      pending.delete(handle);
      fakeClear(handle);
    }) as typeof clearTimeout;
  }

  readonly now = (): number => Date.now();

  /**
   * Moves time forward by `ms`, firing every timer that comes due on the way; after each, lets the work it started
   * settle (the store's promises), so the timer it arms next is seen.
   */
  async advance(ms: number): Promise<void> {
    const end = Date.now() + ms;
    for (;;) {
      const next = this.nextTimerAt;
      if (next === undefined || next > end) break;
      await vi.advanceTimersByTimeAsync(Math.max(0, next - Date.now()));
      await this.settle();
    }
    await vi.advanceTimersByTimeAsync(end - Date.now());
  }

  /** Lets promise callbacks queued so far run (what a timer's async work needs against SQLite). */
  async settle(): Promise<void> {
    for (let i = 0; i < 3; i++) await new Promise<void>((resolve) => setImmediate(resolve));
  }

  /** Sets the wall clock without firing timers, like an NTP step (armed timers keep their delay, as real ones do). */
  jump(ms: number): void {
    vi.setSystemTime(Date.now() + ms);
    for (const [handle, at] of this.pending) this.pending.set(handle, at + ms);
  }

  /** When the earliest armed timer fires, if any. */
  get nextTimerAt(): number | undefined {
    return this.pending.size > 0 ? Math.min(...this.pending.values()) : undefined;
  }

  dispose(): void {
    // vitest restores only the fakes it installed itself.
    Object.assign(globalThis, this.fakes);
    vi.useRealTimers();
  }
}
