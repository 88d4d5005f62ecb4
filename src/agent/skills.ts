import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

export interface Skill {
  name: string;
  description: string;
  /** Path of the SKILL.md the model reads when the skill applies. */
  path: string;
}

/**
 * Skills are folders with a SKILL.md whose front matter has `name` and `description`.
 * Later directories override earlier ones by name, so a workspace skill replaces a bundled one.
 */
export function listSkills(dirs: string[]): Skill[] {
  const byName = new Map<string, Skill>();
  for (const dir of dirs) {
    if (!existsSync(dir)) continue;
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue;
      const path = join(dir, entry.name, "SKILL.md");
      if (!existsSync(path)) continue;
      const meta = parseFrontMatter(readFileSync(path, "utf8"));
      byName.set(meta.name ?? entry.name, {
        name: meta.name ?? entry.name,
        description: meta.description ?? "",
        path,
      });
    }
  }
  return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
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
