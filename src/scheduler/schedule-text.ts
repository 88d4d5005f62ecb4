import { createRequire } from "node:module";
import type { Schedule } from "../store/store.js";
import { formatInZone, zoneOffsets } from "../time-zone.js";
import { compileCron, describeSchedule, formatSeconds, nextRun, parseIsoInZone, ScheduleError } from "./schedule.js";

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400 };
const AMOUNT = /(\d+)\s*(s|sec|seconds?|min|minutes?|m|h|hours?|d|days?)\b/gi;

/** A schedule as a person types it: `every 90 min` (`every 1 h 30 min`, `every 600 s`; anchored at `now`), an ISO
 * 8601 date-time for one run (wall time in `tz` without an offset), or a cron expression read in `tz`. Pure. */
export function parseScheduleText(text: string, tz: string, now: number): Schedule {
  const input = text.trim();
  const every = /^every\s+(.+)$/i.exec(input);
  if (every) {
    const rest = every[1].trim().toLowerCase();
    // The pattern admits only the units' spellings, whose first letters differ.
    const seconds = [...rest.matchAll(AMOUNT)].reduce((sum, [, n, unit]) => sum + Number(n) * UNIT_SECONDS[unit[0]], 0);
    if (seconds <= 0 || rest.replace(AMOUNT, "").trim() !== "") {
      throw new ScheduleError(`"${input}" is not a period such as "every 30 min", "every 2 h" or "every 600 s".`);
    }
    return { kind: "every", everySeconds: seconds, anchor: now };
  }
  if (/^\d{4}-\d{2}-\d{2}/.test(input)) return { kind: "at", at: parseIsoInZone(input, tz) };
  if (!input)
    throw new ScheduleError("the schedule is empty: give a time, a period (every 30 min) or a cron expression.");
  compileCron(input, tz);
  return { kind: "cron", expr: input, tz };
}

/** The schedule written as parseScheduleText reads it back (the edit form's starting text). Pure. */
export function scheduleText(schedule: Schedule, tz: string): string {
  switch (schedule.kind) {
    case "at": {
      // Seconds only when there are some: a time read back is the same instant.
      const iso = new Date(schedule.at + zoneOffsets(tz)(schedule.at)).toISOString();
      return iso.slice(0, iso.slice(16, 23) === ":00.000" ? 16 : 19);
    }
    case "every":
      return `every ${formatSeconds(schedule.everySeconds)}`;
    case "cron":
      return schedule.expr;
  }
}

/** How often a job runs, in words ("At 08:30, Monday through Friday", "every 2 h"). Pure. */
export function scheduleInWords(schedule: Schedule, tz: string): string {
  if (schedule.kind === "at") return `once, ${formatInZone(schedule.at, tz)}`;
  if (schedule.kind === "cron") {
    try {
      // Required here, not imported: it takes ~25 ms to load, and the gateway's start never needs it.
      const cronstrue = createRequire(import.meta.url)("cronstrue") as typeof import("cronstrue").default;
      return `${cronstrue.toString(schedule.expr, { use24HourTimeFormat: true })} (${schedule.tz})`;
    } catch {}
  }
  return describeSchedule(schedule, tz);
}

/** The shortest gap between the next few runs: how often a recurring schedule really fires. */
export function shortestInterval(schedule: Schedule, from: Date, samples = 6): number | null {
  if (schedule.kind === "at") return null;
  if (schedule.kind === "every") return schedule.everySeconds * 1000;
  const first = nextRun(schedule, from);
  const runs = first ? upcomingRuns(schedule, first.getTime(), samples + 1) : [];
  const gaps = runs.slice(1).map((at, i) => at - runs[i]);
  return gaps.length > 0 ? Math.min(...gaps) : null;
}

/** The next `count` runs from `first` on (the job's next run), for the page. Pure. */
export function upcomingRuns(schedule: Schedule, first: number, count: number): number[] {
  const runs = [first];
  while (runs.length < count) {
    const next = nextRun(schedule, new Date(runs[runs.length - 1]));
    if (!next) break;
    runs.push(next.getTime());
  }
  return runs;
}
