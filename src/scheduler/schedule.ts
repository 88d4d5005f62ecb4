import { Cron } from "croner";
import type { Schedule } from "../store/store.js";
import { formatInZone, wallTimeToInstant, zoneOffsets } from "../time-zone.js";

/** A schedule the user got wrong, worded for the model. */
export class ScheduleError extends Error {}

/** The first run strictly after `from`, or null when there is none (a one-shot whose time has passed). Pure. */
export function nextRun(schedule: Schedule, from: Date): Date | null {
  const t = from.getTime();
  switch (schedule.kind) {
    case "at":
      return schedule.at > t ? new Date(schedule.at) : null;
    case "every": {
      const period = schedule.everySeconds * 1000;
      if (t < schedule.anchor) return new Date(schedule.anchor);
      const slots = Math.floor((t - schedule.anchor) / period) + 1;
      return new Date(schedule.anchor + slots * period);
    }
    case "cron": {
      // croner answers in wall-clock steps; the loop guards the one promise we rely on (strictly later than `from`),
      // which a wall-clock library can bend around a DST change.
      const cron = compileCron(schedule.expr, schedule.tz);
      let next = cron.nextRun(from);
      for (let i = 0; next && next.getTime() <= t && i < 5; i++) next = cron.nextRun(new Date(next.getTime() + 1000));
      return next && next.getTime() > t ? next : null;
    }
  }
}

/** Checks a cron expression (5 or 6 fields, optional seconds first) and returns croner's reading of it. */
export function compileCron(expr: string, tz: string): Cron {
  const fields = expr.trim().split(/\s+/);
  const nickname = fields.length === 1 && fields[0].startsWith("@");
  if (!nickname && fields.length !== 5 && fields.length !== 6) {
    throw new ScheduleError(
      `cron_expr "${expr}" has ${fields.length} field${fields.length === 1 ? "" : "s"}; use 5 (minute hour day month weekday) or 6 (second first).`,
    );
  }
  try {
    return new Cron(expr.trim(), { timezone: tz, paused: true });
  } catch (err) {
    throw new ScheduleError(
      `cron_expr "${expr}" is not valid: ${(err as Error).message.replace(/^CronPattern: /, "")}.`,
    );
  }
}

const ISO_DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3})\d*)?)?)?\s*(Z|([+-])(\d{2})(?::?(\d{2}))?)?$/i;

/** Reads an ISO 8601 date-time: with an offset (`Z`, `+02:00`) that instant, without one wall-clock time in `tz`; a
 * date alone means midnight. A wall time skipped by a DST change moves forward by the gap; one that happens twice means
 * the first (as Temporal's "compatible"). */
export function parseIsoInZone(text: string, tz: string): number {
  const m = ISO_DATE_TIME.exec(text.trim());
  if (!m) {
    throw new ScheduleError(
      `at "${text}" is not an ISO 8601 date-time such as 2025-06-01T09:30 or 2025-06-01T09:30:00+02:00.`,
    );
  }
  const [, y, mo, d, h = "00", mi = "00", s = "00", ms = "0", offset, sign, oh = "0", om = "0"] = m;
  const asUtc = Date.UTC(+y, +mo - 1, +d, +h, +mi, +s, +ms.padEnd(3, "0"));
  // Date.UTC rolls 31 April over into May and 24:00 into the next day: a real time reads back the same.
  if (new Date(asUtc).toISOString().slice(5, 19) !== `${mo}-${d}T${h}:${mi}:${s}`) {
    throw new ScheduleError(`at "${text}" is not a real date and time.`);
  }
  if (offset) return asUtc - (sign === "-" ? -1 : 1) * (Number(oh) * 60 + Number(om)) * 60_000;
  return wallTimeToInstant(asUtc, zoneOffsets(tz));
}

/** A one-line description of how often a job runs, for lists and confirmations. */
export function describeSchedule(schedule: Schedule, tz: string): string {
  switch (schedule.kind) {
    case "at":
      return `once at ${formatInZone(schedule.at, tz)}`;
    case "every":
      return `every ${formatSeconds(schedule.everySeconds)}`;
    case "cron":
      return `cron "${schedule.expr}" (${schedule.tz})`;
  }
}

const UNITS = { d: 86400, h: 3600, min: 60, s: 1 };

export function formatSeconds(total: number): string {
  // Each unit counts what the larger one before it leaves over.
  const larger = [Infinity, ...Object.values(UNITS)];
  const parts = Object.entries(UNITS).flatMap(([label, size], i) => {
    const count = Math.floor((total % larger[i]) / size);
    return count > 0 ? [`${count} ${label}`] : [];
  });
  return parts.join(" ") || "0 s";
}
