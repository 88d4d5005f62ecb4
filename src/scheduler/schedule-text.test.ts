import { describe, expect, it } from "vitest";
import type { CronJob } from "../store/store.js";
import { checkEdit, resumeAt } from "./job-actions.js";
import { ScheduleError } from "./schedule.js";
import { parseScheduleText, scheduleInWords, scheduleText, upcomingRuns } from "./schedule-text.js";

const NOW = Date.parse("2026-03-01T10:00:00Z");

describe("schedules as people type them", () => {
  it("reads periods, one time in the zone, and cron expressions; anything else is one sentence", () => {
    expect(parseScheduleText("every 90 min", "UTC", NOW)).toEqual({ kind: "every", everySeconds: 5400, anchor: NOW });
    expect(parseScheduleText("every 1 h 30 min", "UTC", NOW)).toMatchObject({ everySeconds: 5400 });
    expect(parseScheduleText("Every 2 hours", "UTC", NOW)).toMatchObject({ everySeconds: 7200 });
    expect(parseScheduleText("every 600 s", "UTC", NOW)).toMatchObject({ everySeconds: 600 });
    expect(parseScheduleText("every 1 day", "UTC", NOW)).toMatchObject({ everySeconds: 86400 });
    expect(parseScheduleText("2026-03-02T09:30", "Europe/Berlin", NOW)).toEqual({
      kind: "at",
      at: Date.parse("2026-03-02T08:30:00Z"),
    });
    expect(parseScheduleText(" 30 8 * * 1-5 ", "Europe/Berlin", NOW)).toEqual({
      kind: "cron",
      expr: "30 8 * * 1-5",
      tz: "Europe/Berlin",
    });
    for (const bad of ["every now and then", "every 0 s", "every 5 fortnights", "", "1 2 3", "tomorrow"]) {
      expect(() => parseScheduleText(bad, "UTC", NOW), bad).toThrow(ScheduleError);
    }
  });

  it("writes a schedule so it reads back the same, and says it in words", () => {
    for (const schedule of [
      { kind: "every", everySeconds: 5400, anchor: NOW },
      { kind: "at", at: Date.parse("2026-03-02T08:30:00Z") },
      { kind: "at", at: Date.parse("2026-03-02T08:30:15Z") },
      { kind: "cron", expr: "30 8 * * 1-5", tz: "Europe/Berlin" },
    ] as const) {
      expect(parseScheduleText(scheduleText(schedule, "Europe/Berlin"), "Europe/Berlin", NOW)).toEqual(schedule);
    }
    expect(scheduleInWords({ kind: "cron", expr: "30 8 * * 1-5", tz: "Europe/Berlin" }, "Europe/Berlin")).toBe(
      "At 08:30, Monday through Friday (Europe/Berlin)",
    );
    expect(scheduleInWords({ kind: "every", everySeconds: 5400, anchor: 0 }, "UTC")).toBe("every 1 h 30 min");
    const every = { kind: "every", everySeconds: 60, anchor: 0 } as const;
    expect(upcomingRuns(every, 60_000, 3)).toEqual([60_000, 120_000, 180_000]);
    expect(upcomingRuns({ kind: "at", at: 5 }, 5, 3)).toEqual([5]);
  });
});

describe("editing and resuming a job", () => {
  const job: CronJob = {
    id: "j1",
    message: "stretch",
    schedule: { kind: "every", everySeconds: 3600, anchor: NOW - 1000 },
    tz: "UTC",
    origin: { channel: "telegram", chatId: "42", sessionKey: "telegram:42", isGroup: false },
    createdAt: 0,
    nextRunAt: NOW + 3599_000,
    runCount: 0,
    failures: 0,
    limits: {},
  };
  const edit = (input: Partial<{ message: string; schedule: string; tz: string }>) =>
    checkEdit(job, { message: "stretch", schedule: "every 1 h", tz: "UTC", ...input }, NOW, 60);

  it("keeps an unchanged schedule's place, takes a new one, and refuses what cannot be", () => {
    expect(edit({ message: " drink water " })).toEqual({
      message: "drink water",
      schedule: job.schedule,
      tz: "UTC",
      nextRunAt: NOW + 3599_000,
    });
    expect(edit({ schedule: "0 9 * * *", tz: "Europe/Berlin" })).toMatchObject({
      schedule: { kind: "cron", expr: "0 9 * * *", tz: "Europe/Berlin" },
      nextRunAt: Date.parse("2026-03-02T08:00:00Z"),
    });
    expect(edit({ message: "  " })).toBe("The text must have 1 to 4000 characters.");
    expect(edit({ message: "x".repeat(4001) })).toBe("The text must have 1 to 4000 characters.");
    expect(edit({ tz: "Mars/Olympus" })).toBe('"Mars/Olympus" is not an IANA time zone such as Europe/Berlin.');
    expect(edit({ schedule: "every 10 s" })).toContain("the shortest period allowed is 1 min");
    expect(edit({ schedule: "* * * * * *" })).toContain("the shortest period allowed is 1 min");
    expect(edit({ schedule: "2020-01-01T00:00" })).toContain("never runs after now");
    expect(edit({ schedule: "every now and then" })).toContain("The schedule:");
  });

  it("resumes at the next slot from now; a one-time job whose time passed runs at once", () => {
    expect(resumeAt(job.schedule, NOW)).toBe(NOW + 3599_000);
    expect(resumeAt({ kind: "at", at: NOW - 5 }, NOW)).toBe(NOW);
    expect(resumeAt({ kind: "at", at: NOW + 5 }, NOW)).toBe(NOW + 5);
  });
});
