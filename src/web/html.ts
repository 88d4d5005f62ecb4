/** Escapes text for HTML content and double-quoted attributes. Everything shown goes through it. */
export function esc(value: unknown): string {
  return String(value ?? "")
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;")
    .replaceAll("'", "&#39;");
}

export type TimeFormat = (ms: number, timeZone: string) => string;

/**
 * Formats times in a zone, short: "30 Nov 17:05". Building an Intl formatter costs far more
 * than using one, so each render makes one per zone.
 */
export function timeFormat(): TimeFormat {
  const formatters = new Map<string, Intl.DateTimeFormat>();
  return (ms, timeZone) => {
    let f = formatters.get(timeZone);
    if (!f) {
      f = new Intl.DateTimeFormat("en-GB", {
        timeZone,
        day: "numeric",
        month: "short",
        hour: "2-digit",
        minute: "2-digit",
      });
      formatters.set(timeZone, f);
    }
    return f.format(ms);
  };
}

export function formatAgo(ms: number, now: number): string {
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

export function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
