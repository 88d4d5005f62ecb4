import { createHash, randomUUID } from "node:crypto";
import { lstatSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { readTextBeneath } from "../tools/files/safe-read.js";

const MEMORY_FILE = "MEMORY.md";
/** Past this size MEMORY.md is read only in part: it is meant to be a page, not a book. */
const MAX_READ_BYTES = 1024 * 1024;

export interface MemoryFileText {
  text: string;
  hash: string;
}

/**
 * Reads MEMORY.md at the workspace's root through the file tools' race-free reader: a regular
 * file only (a symlink, FIFO or folder there is ignored, so nothing leads the read out of the
 * workspace or blocks it), at most 1 MiB.
 */
export function readMemoryFile(workspace: string): MemoryFileText | undefined {
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

/**
 * Adds facts to MEMORY.md under a dated heading, skipping those already written there. The new
 * file is written beside it (O_EXCL, so no symlink is followed) and renamed over it in one step:
 * a crash leaves the old file or the new one, never half of it. When MEMORY.md is there but is not
 * a regular file (a symlink the owner made, say), it is left alone and nothing is written.
 * Returns the facts that were added.
 */
export function appendMemoryFacts(workspace: string, facts: string[], date: string): string[] {
  const path = join(workspace, MEMORY_FILE);
  let exists = false;
  try {
    const info = lstatSync(path);
    if (!info.isFile()) return [];
    exists = true;
  } catch {
    // Not there yet: created below.
  }
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
  const text = `${current.trimEnd()}\n\n## Learned ${date}\n\n${added.map((f) => `- ${f}`).join("\n")}\n`;
  const temp = join(workspace, `.${MEMORY_FILE}.${randomUUID()}.tmp`);
  try {
    writeFileSync(temp, text, { flag: "wx", mode: 0o644 });
    renameSync(temp, path);
  } catch (err) {
    rmSync(temp, { force: true });
    throw err;
  }
  return added;
}

function normalize(text: string): string {
  return text.toLowerCase().replace(/\s+/g, " ");
}
