import { wallTimeToInstant, zoneOffsets } from "../time-zone.js";

export type Periods = ReturnType<typeof periodsAt>;

/** The day and the month `now` falls in, as a person in `tz` counts them: midnight to midnight and the first of the
 * month to the next (a midnight a change of clocks skips starts at its first instant). */
export function periodsAt(now: number, tz: string) {
  const offsetAt = zoneOffsets(tz);
  const wall = new Date(now + offsetAt(now));
  const [year, month, day] = [wall.getUTCFullYear(), wall.getUTCMonth(), wall.getUTCDate()];
  const at = (m: number, d: number) => wallTimeToInstant(Date.UTC(year, m, d), offsetAt);
  return { dayStart: at(month, day), dayEnd: at(month, day + 1), monthStart: at(month, 1), monthEnd: at(month + 1, 1) };
}
