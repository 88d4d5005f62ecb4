/** The one place time zones are read and written: every wall-clock time pincer shows or parses goes through here. */

function wallFormat(tz: string, extra?: Intl.DateTimeFormatOptions): Intl.DateTimeFormat {
  return new Intl.DateTimeFormat("en-US", {
    timeZone: tz,
    hourCycle: "h23",
    weekday: "short",
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
    ...extra,
  });
}

function fieldsOf(parts: Intl.DateTimeFormatPart[]): (type: string) => string {
  return (type) => parts.find((p) => p.type === type)?.value ?? "";
}

/** How far `tz` is ahead of UTC at an instant, in milliseconds. One formatter serves every instant asked: making
 * one costs 0.1–0.3 ms, and a day's and month's bounds ask a dozen times. */
export function zoneOffsets(tz: string): (instant: number) => number {
  const format = wallFormat(tz);
  return (instant) => {
    const field = fieldsOf(format.formatToParts(new Date(instant)));
    const get = (type: string) => Number(field(type));
    const wall = Date.UTC(get("year"), get("month") - 1, get("day"), get("hour"), get("minute"), get("second"));
    return wall - Math.floor(instant / 1000) * 1000;
  };
}

/** `wallAsUtc` is the wall-clock reading encoded as if it were UTC; returns the real instant in the zone of `offsetAt`. */
export function wallTimeToInstant(wallAsUtc: number, offsetAt: (instant: number) => number): number {
  const day = 24 * 3600_000;
  const before = offsetAt(wallAsUtc - day);
  const after = offsetAt(wallAsUtc + day);
  const candidates = [wallAsUtc - before, wallAsUtc - after].filter(
    (instant) => instant + offsetAt(instant) === wallAsUtc,
  );
  if (candidates.length > 0) return Math.min(...candidates);
  // Skipped by a spring-forward gap: the offset from before the change lands after the gap.
  return wallAsUtc - before;
}

/** An absolute time as a person in `tz` reads it, with the offset so the model can't misread it. */
export function formatInZone(instant: number, tz: string): string {
  // Asked for here only, as it slows the formatter: "GMT+02:00" (a zero offset is plain "GMT" in some ICU builds).
  const get = fieldsOf(wallFormat(tz, { timeZoneName: "longOffset" }).formatToParts(new Date(instant)));
  const utc = `UTC${get("timeZoneName").slice(3) || "+00:00"}`;
  const seconds = get("second") === "00" ? "" : `:${get("second")}`;
  return `${get("weekday")} ${get("year")}-${get("month")}-${get("day")} ${get("hour")}:${get("minute")}${seconds} ${tz} (${utc})`;
}

// Formatters by zone, each with the parts of the last minute it formatted: building one costs far more than using
// it, zones are few, and every turn asks for the current minute again.
const localFormats = new Map<
  string,
  { format: Intl.DateTimeFormat; minute: number; parts: Intl.DateTimeFormatPart[] }
>();

/** The local time to the minute with its weekday, `Mon 2025-06-02 09:30`. */
export function formatLocal(date: Date | number, timezone: string): string {
  const get = localParts(date, timezone);
  return `${get("weekday")} ${get("year")}-${get("month")}-${get("day")} ${get("hour")}:${get("minute")}`;
}

/** The local time to the minute, `YYYY-MM-DD HH:MM` (formatLocal without its three-letter weekday). */
export const formatMinute = (date: Date | number, timezone: string) => formatLocal(date, timezone).slice(4);

/** The local calendar day, `YYYY-MM-DD`. */
export const formatDay = (date: Date | number, timezone: string) => formatLocal(date, timezone).slice(4, 14);

function localParts(date: Date | number, timezone: string): (type: string) => string {
  let zone = localFormats.get(timezone);
  if (!zone) {
    zone = { format: wallFormat(timezone, { second: undefined }), minute: Number.NaN, parts: [] };
    localFormats.set(timezone, zone);
  }
  // Zones have been whole minutes off UTC since 1972, so one minute's parts serve all of its instants.
  const minute = Math.floor(Number(date) / 60_000);
  if (minute !== zone.minute) {
    zone.parts = zone.format.formatToParts(date);
    zone.minute = minute;
  }
  return fieldsOf(zone.parts);
}
