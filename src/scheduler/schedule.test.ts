import { describe, expect, it } from "vitest";
import type { Schedule } from "../store/store.js";
import { formatInZone } from "../time-zone.js";
import { describeSchedule, nextRun, parseIsoInZone, ScheduleError } from "./schedule.js";
import { shortestInterval } from "./schedule-text.js";

const iso = (d: Date | null) => d?.toISOString() ?? null;
const at = (text: string) => new Date(text);

describe("nextRun for cron expressions", () => {
  it("reads the expression as wall-clock time in the job's zone", () => {
    const weekdays: Schedule = { kind: "cron", expr: "30 8 * * 1-5", tz: "Europe/Berlin" };
    // Friday 2025-01-10 12:00 UTC: the next weekday 08:30 in Berlin (UTC+1) is Monday 07:30 UTC.
    expect(iso(nextRun(weekdays, at("2025-01-10T12:00:00Z")))).toBe("2025-01-13T07:30:00.000Z");
    const kolkata: Schedule = { kind: "cron", expr: "30 8 * * 1-5", tz: "Asia/Kolkata" };
    expect(iso(nextRun(kolkata, at("2025-01-10T12:00:00Z")))).toBe("2025-01-13T03:00:00.000Z");
    const newYork: Schedule = { kind: "cron", expr: "0 9 * * *", tz: "America/New_York" };
    expect(iso(nextRun(newYork, at("2025-01-10T12:00:00Z")))).toBe("2025-01-10T14:00:00.000Z");
  });

  it("keeps 09:00 at 09:00 local across the spring DST change", () => {
    const daily: Schedule = { kind: "cron", expr: "0 9 * * *", tz: "America/New_York" };
    // DST starts Sunday 2025-03-09: 09:00 is 14:00 UTC before, 13:00 UTC after.
    let from = at("2025-03-08T00:00:00Z");
    const runs: string[] = [];
    for (let i = 0; i < 3; i++) {
      const next = nextRun(daily, from);
      if (!next) throw new Error("no run");
      runs.push(next.toISOString());
      from = next;
    }
    expect(runs).toEqual(["2025-03-08T14:00:00.000Z", "2025-03-09T13:00:00.000Z", "2025-03-10T13:00:00.000Z"]);
  });

  it("fires a wall time skipped by spring-forward once, an hour later, and a repeated one once", () => {
    const early: Schedule = { kind: "cron", expr: "30 2 * * *", tz: "Europe/Berlin" };
    // 2025-03-30 02:30 does not exist in Berlin: the run moves to 03:30 CEST (01:30 UTC).
    expect(iso(nextRun(early, at("2025-03-29T12:00:00Z")))).toBe("2025-03-30T01:30:00.000Z");
    expect(iso(nextRun(early, at("2025-03-30T01:30:00Z")))).toBe("2025-03-31T00:30:00.000Z");
    // 2025-10-26 02:30 happens twice; the job still runs once that night.
    const first = nextRun(early, at("2025-10-25T12:00:00Z"));
    const second = first && nextRun(early, first);
    expect(second && first && second.getTime() - first.getTime()).toBeGreaterThanOrEqual(23 * 3600_000);
    expect(iso(second)).toBe("2025-10-27T01:30:00.000Z");
  });

  it("is always strictly later than the instant it starts from", () => {
    const quarter: Schedule = { kind: "cron", expr: "*/15 * * * *", tz: "Europe/Berlin" };
    let from = at("2025-10-25T23:00:00Z");
    for (let i = 0; i < 20; i++) {
      const next = nextRun(quarter, from);
      expect(next?.getTime()).toBeGreaterThan(from.getTime());
      from = next ?? from;
    }
  });

  it("accepts six fields with seconds first", () => {
    const s: Schedule = { kind: "cron", expr: "15 0 12 * * *", tz: "UTC" };
    expect(iso(nextRun(s, at("2025-01-01T00:00:00Z")))).toBe("2025-01-01T12:00:15.000Z");
  });

  it("rejects expressions that are not 5 or 6 fields or not cron at all", () => {
    expect(() => nextRun({ kind: "cron", expr: "* * * *", tz: "UTC" }, new Date())).toThrow(ScheduleError);
    expect(() => nextRun({ kind: "cron", expr: "61 * * * *", tz: "UTC" }, new Date())).toThrow(/minute/);
  });
});

describe("nextRun for fixed periods and one-shots", () => {
  it("counts periods from the anchor, so a late check does not shift the grid", () => {
    const every: Schedule = { kind: "every", everySeconds: 600, anchor: Date.parse("2025-01-01T00:00:00Z") };
    expect(iso(nextRun(every, at("2025-01-01T00:00:00Z")))).toBe("2025-01-01T00:10:00.000Z");
    expect(iso(nextRun(every, at("2025-01-01T00:27:13Z")))).toBe("2025-01-01T00:30:00.000Z");
    expect(iso(nextRun(every, at("2024-12-31T00:00:00Z")))).toBe("2025-01-01T00:00:00.000Z");
  });

  it("gives a one-shot's time until it has passed, then nothing", () => {
    const once: Schedule = { kind: "at", at: Date.parse("2025-06-01T07:00:00Z") };
    expect(iso(nextRun(once, at("2025-06-01T06:59:59Z")))).toBe("2025-06-01T07:00:00.000Z");
    expect(nextRun(once, at("2025-06-01T07:00:00Z"))).toBeNull();
  });

  it("measures how often a recurring schedule fires", () => {
    expect(shortestInterval({ kind: "cron", expr: "*/5 * * * * *", tz: "UTC" }, new Date(0))).toBe(5000);
    expect(shortestInterval({ kind: "cron", expr: "0 9 * * 1-5", tz: "UTC" }, new Date(0))).toBe(24 * 3600_000);
    expect(shortestInterval({ kind: "at", at: 1 }, new Date(0))).toBeNull();
  });
});

describe("parseIsoInZone", () => {
  it("reads a time without offset as wall-clock time in the zone", () => {
    expect(new Date(parseIsoInZone("2025-07-01T09:00", "Europe/Berlin")).toISOString()).toBe(
      "2025-07-01T07:00:00.000Z",
    );
    expect(new Date(parseIsoInZone("2025-01-01T09:00:00", "Europe/Berlin")).toISOString()).toBe(
      "2025-01-01T08:00:00.000Z",
    );
    expect(new Date(parseIsoInZone("2025-01-01 09:00", "America/Los_Angeles")).toISOString()).toBe(
      "2025-01-01T17:00:00.000Z",
    );
    expect(new Date(parseIsoInZone("2025-01-01", "Asia/Tokyo")).toISOString()).toBe("2024-12-31T15:00:00.000Z");
  });

  it("honours an explicit offset whatever the zone", () => {
    expect(new Date(parseIsoInZone("2025-07-01T09:00:00+02:00", "Asia/Tokyo")).toISOString()).toBe(
      "2025-07-01T07:00:00.000Z",
    );
    expect(new Date(parseIsoInZone("2025-07-01T09:00:00Z", "Asia/Tokyo")).toISOString()).toBe(
      "2025-07-01T09:00:00.000Z",
    );
    expect(new Date(parseIsoInZone("2025-07-01T09:00-0530", "UTC")).toISOString()).toBe("2025-07-01T14:30:00.000Z");
  });

  it("moves a wall time skipped by DST forward and takes the first of a repeated one", () => {
    expect(new Date(parseIsoInZone("2025-03-30T02:30", "Europe/Berlin")).toISOString()).toBe(
      "2025-03-30T01:30:00.000Z",
    );
    expect(new Date(parseIsoInZone("2025-10-26T02:30", "Europe/Berlin")).toISOString()).toBe(
      "2025-10-26T00:30:00.000Z",
    );
  });

  it("rejects what is not an ISO date-time or not a real date", () => {
    expect(() => parseIsoInZone("tomorrow at 9", "UTC")).toThrow(/ISO 8601/);
    expect(() => parseIsoInZone("2025-02-30T09:00", "UTC")).toThrow(/not a real date/);
    expect(() => parseIsoInZone("2025-01-01T25:00", "UTC")).toThrow(/not a real date/);
  });
});

describe("formatting", () => {
  it("shows an absolute time in the zone with its offset", () => {
    const instant = Date.parse("2025-07-01T07:00:00Z");
    expect(formatInZone(instant, "Europe/Berlin")).toBe("Tue 2025-07-01 09:00 Europe/Berlin (UTC+02:00)");
    expect(formatInZone(instant, "America/St_Johns")).toBe("Tue 2025-07-01 04:30 America/St_Johns (UTC-02:30)");
    expect(formatInZone(instant + 5000, "UTC")).toBe("Tue 2025-07-01 07:00:05 UTC (UTC+00:00)");
  });

  it("describes schedules in words", () => {
    expect(describeSchedule({ kind: "every", everySeconds: 5400, anchor: 0 }, "UTC")).toBe("every 1 h 30 min");
    expect(describeSchedule({ kind: "cron", expr: "0 9 * * *", tz: "Asia/Tokyo" }, "Asia/Tokyo")).toBe(
      'cron "0 9 * * *" (Asia/Tokyo)',
    );
  });
});
