import { safeSlice } from "../text.js";

/** How long a tool result may be before the registry cuts it (the model reads more on request). */
export const DEFAULT_MAX_RESULT_CHARS = 16_000;

/** Keeps the head (where the answer usually is) and a short tail (errors and summaries come last), with a note. */
export function capToolResult(text: string, max: number): string {
  if (text.length <= max) return text;
  const tailChars = Math.min(1000, Math.floor(max / 8));
  const head = safeSlice(text, 0, Math.max(0, max - tailChars));
  const tail = safeSlice(text, text.length - tailChars, text.length);
  const cut = text.length - head.length - tail.length;
  return `${head}\n… [pincer cut ${cut.toLocaleString("en-US")} of ${text.length.toLocaleString("en-US")} characters here. ${MORE_HINT}] …\n${tail}`;
}

const MORE_HINT =
  "To see the rest, ask for less at a time: read_file with offset and limit, grep for the part you need, or write a command's output to a file and read it in parts";
