/** Slices by UTF-16 index without leaving half of a surrogate pair at either end. */
export function safeSlice(text: string, start: number, end: number): string {
  let s = Math.max(0, start);
  let e = Math.min(text.length, end);
  const isLowSurrogate = (at: number) => at > 0 && at < text.length && (text.charCodeAt(at) & 0xfc00) === 0xdc00;
  if (isLowSurrogate(s)) s++;
  if (isLowSurrogate(e)) e--;
  return e > s ? text.slice(s, e) : "";
}

/** `text` cut after `max` characters, with "…" when it was longer. */
export function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** `text` matched literally inside a RegExp. */
export const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** Whether a name matches a glob of config lists (`*` any run of characters): `approvals.tools`, `roles.NAME.tools`. */
export function matchesGlob(name: string, glob: string): boolean {
  return new RegExp(`^${glob.split("*").map(escapeRegExp).join(".*")}$`).test(name);
}
