import { afterEach, describe, expect, it, vi } from "vitest";
import { SESSION_IDLE_MS, WebSessions } from "./sessions.js";

afterEach(() => {
  vi.useRealTimers();
});

describe("control page sessions", () => {
  it("are random per login, end on logout, and expire after being left alone", () => {
    vi.useFakeTimers({ now: 0 });
    const sessions = new WebSessions();
    const a = sessions.create();
    const b = sessions.create();
    expect(a).not.toBe(b);
    expect(a).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(sessions.check(a)).toBe(true);
    expect(sessions.check("forged")).toBe(false);
    let closed = 0;
    sessions.onEnd(b, () => closed++);
    const off = sessions.onEnd(b, () => closed++);
    off();
    expect(sessions.end(b)).toBe(true);
    expect(closed).toBe(1);
    expect(sessions.check(b)).toBe(false);
    expect(sessions.end(b)).toBe(false);
    // Use extends a session; idleness ends it.
    vi.setSystemTime(SESSION_IDLE_MS - 100);
    expect(sessions.check(a)).toBe(true);
    vi.setSystemTime(2 * SESSION_IDLE_MS - 200);
    expect(sessions.check(a)).toBe(true);
    vi.setSystemTime(3 * SESSION_IDLE_MS - 199);
    expect(sessions.check(a)).toBe(false);
  });

  it("keeps at most 64 logins, dropping the oldest, and ends all at once", () => {
    const sessions = new WebSessions();
    const first = sessions.create();
    const rest = Array.from({ length: 64 }, () => sessions.create());
    expect(sessions.check(first)).toBe(false);
    expect(rest.every((s) => sessions.check(s))).toBe(true);
    let closed = 0;
    for (const s of rest) sessions.onEnd(s, () => closed++);
    sessions.endAll();
    expect(closed).toBe(64);
    expect(rest.some((s) => sessions.check(s))).toBe(false);
  });
});
