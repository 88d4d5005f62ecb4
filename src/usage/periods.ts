import { wallTimeToInstant, zoneOffsets } from "../time-zone.js";

/** The day and the month `now` falls in, as a person in the configured zone counts them. */
export interface Periods {
  dayStart: number;
  dayEnd: number;
  monthStart: number;
  monthEnd: number;
}

/** Midnight to midnight and the first of the month to the next, in `tz` (a midnight a change of clocks skips starts at its first instant). */
export function periodsAt(now: number, tz: string): Periods {
  const offsetAt = zoneOffsets(tz);
  const wall = new Date(now + offsetAt(now));
  const [year, month, day] = [wall.getUTCFullYear(), wall.getUTCMonth(), wall.getUTCDate()];
  const at = (m: number, d: number) => wallTimeToInstant(Date.UTC(year, m, d), offsetAt);
  return { dayStart: at(month, day), dayEnd: at(month, day + 1), monthStart: at(month, 1), monthEnd: at(month + 1, 1) };
}
