import { findExecutable } from "../tools/exec/sandbox-check.js";

export interface RequirementEnv {
  /** The daemon's environment (PATH is searched for binaries). */
  env: Record<string, string | undefined>;
}

/** Names listed in a front-matter field: comma- or space-separated. */
function names(value: string | undefined): string[] {
  return (value ?? "").split(/[,\s]+/).filter(Boolean);
}

function onPath(binary: string, path: string): boolean {
  // A name with a slash is not a PATH lookup; refuse it rather than probe arbitrary files.
  return !binary.includes("/") && findExecutable(binary, path) !== undefined;
}

/**
 * What a skill declares it needs (`requires-bins: jq, gh` and `requires-env: GITHUB_TOKEN` in its
 * front matter) and this host lacks, one phrase each; empty when the skill can be used.
 */
export function missingRequirements(meta: Record<string, string>, { env }: RequirementEnv): string[] {
  const missing: string[] = [];
  for (const bin of names(meta["requires-bins"])) {
    if (!onPath(bin, env.PATH ?? "")) missing.push(`program ${bin} is not on PATH`);
  }
  for (const name of names(meta["requires-env"])) {
    if (!env[name]?.trim()) missing.push(`environment variable ${name} is not set`);
  }
  return missing;
}
