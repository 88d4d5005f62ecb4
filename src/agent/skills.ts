import { closeSync, readdirSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "pino";
import type { ReadCache } from "../tools/files/read-cache.js";
import { openInScope } from "../tools/files/safe-open.js";
import { readTextBeneath } from "../tools/files/safe-read.js";
import { missingRequirements } from "./skill-requirements.js";

export interface Skill {
  name: string;
  description: string;
  /** Path of the SKILL.md the model reads when the skill applies. */
  path: string;
  /** Why the skill cannot be used here (requirements from its front matter); empty when it can. */
  missing: string[];
}

/** A folder of skills: `dir` below `root`, so a `skills` link in the workspace cannot lead out of it. */
export interface SkillSource {
  root: string;
  dir: string;
}

/** A SKILL.md larger than this is skipped: its front matter is all the prompt needs. */
export const MAX_SKILL_BYTES = 64 * 1024;

/**
 * Skills are folders with a SKILL.md whose front matter has `name` and `description`.
 * Later sources override earlier ones by name, so a workspace skill replaces a bundled one.
 * Folders and files are opened the race-free way (safe-open.ts): a symlink, a FIFO or an oversized
 * SKILL.md is skipped with a warning, never followed, blocked on or read whole.
 */
export function listSkills(
  sources: SkillSource[],
  log?: Pick<Logger, "warn">,
  env: Record<string, string | undefined> = process.env,
  /** Serves unchanged folders and files from memory (every turn lists the skills). */
  cache?: ReadCache,
): Skill[] {
  const byName = new Map<string, Skill>();
  for (const { root, dir } of sources) {
    for (const name of skillFolders(root, dir, log, cache)) {
      const rel = join(dir, name, "SKILL.md");
      const read = cache ? cache.text(root, rel, MAX_SKILL_BYTES) : readTextBeneath(root, rel, MAX_SKILL_BYTES);
      if (!read.ok) {
        if (!/does not exist/.test(read.reason))
          log?.warn({ file: join(root, rel), reason: read.reason }, "skill skipped");
        continue;
      }
      const meta = parseFrontMatter(read.text);
      byName.set(meta.name ?? name, {
        name: meta.name ?? name,
        description: meta.description ?? "",
        path: read.path,
        missing: missingRequirements(meta, { env }),
      });
    }
  }
  return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
}

/** The real (not linked) folders inside `root/dir`, read through a descriptor of that folder. */
function skillFolders(root: string, dir: string, log?: Pick<Logger, "warn">, cache?: ReadCache): string[] {
  if (cache) {
    try {
      return cache.folders(root, dir);
    } catch (err) {
      log?.warn({ folder: join(root, dir), reason: (err as Error).message }, "skills folder skipped");
      return [];
    }
  }
  let fd: number;
  try {
    fd = openInScope(dir, { workspace: root }, { access: "read", want: "dir", noLinks: true }).fd;
  } catch (err) {
    const reason = (err as Error).message;
    if (!/does not exist/.test(reason)) log?.warn({ folder: join(root, dir), reason }, "skills folder skipped");
    return [];
  }
  try {
    return readdirSync(`/proc/self/fd/${fd}`, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
  } finally {
    closeSync(fd);
  }
}

/** The `key: value` lines between the leading `---` fences; enough for SKILL.md, not a YAML parser. */
export function parseFrontMatter(text: string): Record<string, string> {
  const match = /^---\r?\n([\s\S]*?)\r?\n---/.exec(text);
  if (!match) return {};
  const fields: Record<string, string> = {};
  for (const line of match[1].split(/\r?\n/)) {
    const kv = /^([A-Za-z_][\w-]*):\s*(.*)$/.exec(line);
    if (kv) fields[kv[1]] = kv[2].replace(/^["']|["']$/g, "").trim();
  }
  return fields;
}
