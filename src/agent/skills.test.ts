import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { listSkills, missingRequirements } from "./skills.js";

describe("skill requirements", () => {
  const bin = mkdtempSync(join(tmpdir(), "pincer-bin-"));
  writeFileSync(join(bin, "present-tool"), "#!/bin/sh\n");
  chmodSync(join(bin, "present-tool"), 0o755);
  writeFileSync(join(bin, "not-executable"), "");
  const env = { PATH: bin, SET_VAR: "x", EMPTY_VAR: " " };

  it("names each missing program and variable", () => {
    expect(missingRequirements({ "requires-bins": "present-tool", "requires-env": "SET_VAR" }, env)).toEqual([]);
    expect(
      missingRequirements(
        { "requires-bins": "present-tool, absent-tool not-executable", "requires-env": "EMPTY_VAR UNSET_VAR" },
        env,
      ),
    ).toEqual([
      "program absent-tool is not on PATH",
      "program not-executable is not on PATH",
      "environment variable EMPTY_VAR is not set",
      "environment variable UNSET_VAR is not set",
    ]);
    // A path is not a PATH lookup: no probing of arbitrary files.
    expect(missingRequirements({ "requires-bins": `${bin}/present-tool` }, env)).toHaveLength(1);
  });

  it("listSkills reports why a skill is unavailable", () => {
    const root = mkdtempSync(join(tmpdir(), "pincer-skills-"));
    for (const [name, extra] of [
      ["ready", "requires-bins: present-tool"],
      ["blocked", "requires-env: UNSET_VAR"],
    ]) {
      mkdirSync(join(root, "skills", name), { recursive: true });
      writeFileSync(join(root, "skills", name, "SKILL.md"), `---\nname: ${name}\ndescription: d\n${extra}\n---\n`);
    }
    const skills = listSkills([{ root, dir: "skills" }], undefined, env);
    expect(skills.map((s) => [s.name, s.missing])).toEqual([
      ["blocked", ["environment variable UNSET_VAR is not set"]],
      ["ready", []],
    ]);
  });
});
