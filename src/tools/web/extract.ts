export type BodyKind = "html" | "json" | "text" | "binary";

/** What the body is, from its Content-Type or, when that is missing or generic, sniffed from its first bytes. */
export function classifyBody(contentType: string | undefined, body: Buffer): BodyKind {
  const type = (contentType ?? "").split(";")[0].trim().toLowerCase();
  if (type === "text/html" || type === "application/xhtml+xml") return "html";
  if (type === "application/json" || type.endsWith("+json")) return "json";
  if (type.startsWith("text/") || type === "application/xml" || type.endsWith("+xml")) return "text";
  if (type === "application/javascript" || type === "application/x-ndjson") return "text";
  if (type !== "" && type !== "application/octet-stream" && type !== "binary/octet-stream") return "binary";
  const head = body.subarray(0, 1024);
  if (head.includes(0)) return "binary";
  const start = head.toString("utf8").trimStart().toLowerCase();
  if (/^<!doctype html|^<html|<(head|body|title)[\s>]/.test(start)) return "html";
  if (start.startsWith("{") || start.startsWith("[")) return "json";
  return "text";
}

/** Decodes the body with the charset the header (or, for HTML, a meta tag) names; UTF-8 otherwise. */
export function decodeBody(body: Buffer, contentType: string | undefined, kind: BodyKind): string {
  const fromHeader = /charset\s*=\s*"?([\w.:-]+)/i.exec(contentType ?? "")?.[1];
  const fromMeta =
    kind === "html"
      ? /<meta[^>]+charset\s*=\s*["']?([\w.:-]+)/i.exec(body.subarray(0, 2048).toString("latin1"))?.[1]
      : undefined;
  for (const label of [fromHeader, fromMeta]) {
    try {
      if (label) return new TextDecoder(label).decode(body);
    } catch {
      // An unknown label: try the next one.
    }
  }
  return new TextDecoder().decode(body);
}
