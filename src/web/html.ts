import { formatSeconds } from "../scheduler/schedule.js";

const ENTITIES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** Escapes text for HTML content and double-quoted attributes. Everything shown goes through it. */
export function esc(value: unknown): string {
  return String(value ?? "").replace(/[&<>"']/g, (c) => ENTITIES[c]);
}

export type TimeFormat = (ms: number, timeZone: string) => string;

const SHORT = { day: "numeric", month: "short", hour: "2-digit", minute: "2-digit" } as const;

/** Formats times in a zone, short ("30 Nov 17:05"); one Intl formatter per zone and render, as making one is dear. */
export function timeFormat(): TimeFormat {
  const formatters = new Map<string, Intl.DateTimeFormat>();
  return (ms, timeZone) => {
    const formatter = formatters.get(timeZone) ?? new Intl.DateTimeFormat("en-GB", { ...SHORT, timeZone });
    formatters.set(timeZone, formatter);
    return formatter.format(ms);
  };
}

/** A duration, coarse: its largest unit only, "40 s", "5 min", "3 h", "2 d" (negative counts as 0). */
export function formatSpan(ms: number): string {
  return formatSeconds(Math.max(0, Math.round(ms / 1000)))
    .split(" ", 2)
    .join(" ");
}

/** A button whose press posts `body` to `path` (the page's script sends it with the session). */
export function postButton(label: string, path: string, body: Record<string, string>, danger = false): string {
  const post = ` data-post="${path}" data-body="${esc(JSON.stringify(body))}"`;
  return `<button type="button"${danger ? ' class="danger"' : ""}${post}>${label}</button>`;
}
