import { join } from "node:path";
import type { Logger } from "pino";
import { findExecutable } from "../tools/exec/sandbox-check.js";
import { ReadCache } from "../tools/files/read-cache.js";

export interface Skill {
  name: string;
  description: string;
  path: string;
  /** Why the skill cannot be used here (requirements from its front matter); empty when it can. */
  missing: string[];
}

/** A SKILL.md larger than this is skipped: its front matter is all the prompt needs. */
const MAX_SKILL_BYTES = 64 * 1024;

/** Skills are folders with a SKILL.md whose front matter has `name` and `description`; later sources override earlier
 * ones by name. Each source is `dir` below `root`, so a `skills` link cannot lead out; read race-free (via `cache`):
 * a symlink, a FIFO or an oversized SKILL.md is skipped with a warning, never followed, blocked on or read whole. */
export function listSkills(
  sources: Array<{ root: string; dir: string }>,
  log?: Pick<Logger, "warn">,
  env: Record<string, string | undefined> = process.env,
  cache = new ReadCache(),
): Skill[] {
  const byName = new Map<string, Skill>();
  for (const { root, dir } of sources) {
    let folders: string[] = [];
    try {
      folders = cache.folders(root, dir);
    } catch (err) {
      log?.warn({ folder: join(root, dir), reason: (err as Error).message }, "skills folder skipped");
    }
    for (const name of folders) {
      const rel = join(dir, name, "SKILL.md");
      const read = cache.text(root, rel, MAX_SKILL_BYTES);
      if (!read.ok) {
        if (!/does not exist/.test(read.reason))
          log?.warn({ file: join(root, rel), reason: read.reason }, "skill skipped");
        continue;
      }
      const meta = parseFrontMatter(read.text);
      const skill = { name: meta.name ?? name, description: meta.description ?? "", path: read.path };
      byName.set(skill.name, { ...skill, missing: missingRequirements(meta, env) });
    }
  }
  return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
}

/** What a skill's front matter says it needs (`requires-bins: jq, gh`, `requires-env: A B`) and this host lacks. */
export function missingRequirements(meta: Record<string, string>, env: Record<string, string | undefined>): string[] {
  const names = (field: string) => (meta[field] ?? "").split(/[,\s]+/).filter(Boolean);
  // A name with a slash is not a PATH lookup; it is refused rather than arbitrary files probed.
  const absent = (bin: string) => bin.includes("/") || findExecutable(bin, env.PATH ?? "") === undefined;
  const unset = names("requires-env").filter((name) => !env[name]?.trim());
  const bins = names("requires-bins").filter(absent);
  return [
    ...bins.map((bin) => `program ${bin} is not on PATH`),
    ...unset.map((name) => `environment variable ${name} is not set`),
  ];
}

/** The `key: value` lines between the leading `---` fences; enough for SKILL.md, not a YAML parser. */
function parseFrontMatter(text: string): Record<string, string> {
  const match = /^---\r?\n([\s\S]*?)\r?\n---/.exec(text);
  if (!match) return {};
  const fields: Record<string, string> = {};
  for (const line of match[1].split(/\r?\n/)) {
    const kv = /^([A-Za-z_][\w-]*):\s*(.*)$/.exec(line);
    if (kv) fields[kv[1]] = kv[2].replace(/^["']|["']$/g, "").trim();
  }
  return fields;
}
