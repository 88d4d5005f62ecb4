/** Discord rejects message content longer than this. */
const DISCORD_MESSAGE_LIMIT = 2000;

/** Room kept free in every chunk for the fence that closes a code block cut in two. */
const FENCE_RESERVE = 16;

/** Splits markdown into messages of at most `limit` characters, at a paragraph break, a line break, a space, only then
 * mid-word. A code block cut in two is closed and reopened (with its language), so every chunk renders on its own. */
export function splitMessage(text: string, limit = DISCORD_MESSAGE_LIMIT): string[] {
  if (limit <= FENCE_RESERVE * 2) throw new RangeError(`limit ${limit} is too small to split markdown`);
  const chunks: string[] = [];
  let rest = text.trim();
  while (rest.length > limit) {
    const cut = chooseCut(rest, limit - FENCE_RESERVE);
    let chunk = rest.slice(0, cut).trimEnd();
    // The boundary itself goes: the newlines, or the one space cut at (indentation after it stays).
    rest = rest[cut] === " " ? rest.slice(cut + 1) : rest.slice(cut).replace(/^\n+/, "");
    const fence = openFenceAtEnd(chunk);
    if (fence) {
      chunk = `${chunk}\n${fence.marker}`;
      rest = `${fence.line}\n${rest}`;
    }
    if (chunk.trim()) chunks.push(chunk);
  }
  if (rest.trim()) chunks.push(rest);
  return chunks;
}

function chooseCut(text: string, max: number): number {
  const window = text.slice(0, max + 1);
  const paragraph = window.lastIndexOf("\n\n");
  if (paragraph >= max / 2) return paragraph;
  const line = window.lastIndexOf("\n");
  if (line >= max / 4) return line;
  const space = window.lastIndexOf(" ");
  if (space >= max / 2) return space;
  // No boundary at all: cut mid-word, but never between the halves of a surrogate pair.
  const code = text.charCodeAt(max - 1);
  return code >= 0xd800 && code <= 0xdbff ? max - 1 : max;
}

/** The line that opened the block (to reopen it: "```ts"), and the run of backticks or tildes that closes it. */
type OpenFence = { line: string; marker: string };

/** The code fence still open at the end of `text`, if any (CommonMark: a closing fence is at least as long). */
export function openFenceAtEnd(text: string): OpenFence | undefined {
  let open: OpenFence | undefined;
  for (const line of text.split("\n")) {
    const match = /^ {0,3}(`{3,}|~{3,})(.*)$/.exec(line);
    if (!match) continue;
    const [, marker, info] = match;
    if (!open) {
      // A backtick fence's info string may not contain backticks (that is inline code).
      if (marker[0] === "`" && info.includes("`")) continue;
      // An absurdly long info string is dropped so that reopening always leaves room to progress.
      const opening = line.trimStart();
      open = { line: opening.length > 100 ? marker : opening, marker };
    } else if (marker[0] === open.marker[0] && marker.length >= open.marker.length && info.trim() === "") {
      open = undefined;
    }
  }
  return open;
}
