import { createHash } from "node:crypto";
import { closeSync, constants, fstatSync, lstatSync, openSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { readTextBeneath } from "../tools/files/safe-io.js";

const MEMORY_FILE = "MEMORY.md";
/** Past this size MEMORY.md is read only in part: it is meant to be a page, not a book. */
const MAX_READ_BYTES = 1024 * 1024;

/** MEMORY.md through the race-free reader: a regular file only (a symlink, FIFO or folder is ignored), ≤ 1 MiB. */
export function readMemoryFile(workspace: string): { text: string; hash: string } | undefined {
  const read = readTextBeneath(workspace, MEMORY_FILE, MAX_READ_BYTES);
  if (!read.ok) return undefined;
  return { text: read.text, hash: createHash("sha256").update(read.text).digest("hex") };
}

/** MEMORY.md cut into paragraphs (headings and bullets stay with their lines) for the search index. */
export function memoryParagraphs(text: string): string[] {
  return text
    .split(/\n\s*\n/)
    .map((p) => p.trim())
    .filter((p) => p.length > 0);
}

/** Adds the facts not yet in MEMORY.md under a dated heading; returns those added. Appended in place (O_APPEND,
 * O_NOFOLLOW), never renamed over: a guest's sandbox hides MEMORY.md with a mount on the name, and a rename on the host
 * would show the new file to a command still running. A MEMORY.md that is not a regular file is left alone. */
export function appendMemoryFacts(workspace: string, facts: string[], date: string): string[] {
  const path = join(workspace, MEMORY_FILE);
  const info = lstatSync(path, { throwIfNoEntry: false });
  if (info && !info.isFile()) return [];
  const exists = info !== undefined;
  const current = exists ? readMemoryFile(workspace)?.text : "# Long-term memory\n";
  if (current === undefined) return [];
  let known = normalize(current);
  const added: string[] = [];
  for (const fact of facts) {
    const clean = fact.replace(/\s+/g, " ").trim();
    if (!clean || known.includes(normalize(clean))) continue;
    added.push(clean);
    known += `\n${normalize(clean)}`;
  }
  if (added.length === 0) return [];
  const gap = current.endsWith("\n") ? "\n" : "\n\n";
  const section = `${gap}## Learned ${date}\n\n${added.map((f) => `- ${f}`).join("\n")}\n`;
  const { O_WRONLY, O_APPEND, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK } = constants;
  const fd = openSync(path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | (exists ? O_APPEND : O_CREAT | O_EXCL), 0o644);
  try {
    if (!fstatSync(fd).isFile()) return [];
    writeFileSync(fd, exists ? section : current + section);
  } finally {
    closeSync(fd);
  }
  return added;
}

const normalize = (text: string) => text.toLowerCase().replace(/\s+/g, " ");
