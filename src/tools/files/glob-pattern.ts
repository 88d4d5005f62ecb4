import { createRequire } from "node:module";
import type { RE2JS } from "re2js";
import { ToolError } from "../tool.js";

/** Longer globs are refused: matching cost grows with the pattern, and no real glob is this long. */
export const MAX_GLOB_CHARS = 300;

/** A glob (`*`, `**`, `?`, `[abc]`, `[!abc]`, `{a,b}`; without `/`: at any depth) as RE2, linear whatever the pattern;
 * a glob library's backtracking RegExp is not (`*a*a*a*a*a*b` against a long name). */
export function compileGlob(pattern: string): RE2JS {
  if (pattern.length > MAX_GLOB_CHARS) {
    throw new ToolError(`the glob is longer than ${MAX_GLOB_CHARS} characters; use a shorter pattern.`);
  }
  if (pattern.startsWith("/") || pattern.split("/").includes("..")) {
    throw new ToolError(`the glob "${pattern}" must stay inside the folder: no leading / and no .. parts.`);
  }
  const effective = pattern.includes("/") ? pattern : `**/${pattern}`;
  return re2().compile(`^${globToRegex(effective)}$`);
}

/** re2js (~9 MB) is required by the first glob, not at start (its CommonJS build, so synchronously). */
function re2(): typeof RE2JS {
  return (createRequire(import.meta.url)("re2js") as typeof import("re2js")).RE2JS;
}

export function globToRegex(glob: string): string {
  const RE2JS = re2();
  let out = "";
  let braces = 0;
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === "*" && glob[i + 1] === "*") {
      const atStart = i === 0 || glob[i - 1] === "/";
      const slashAfter = glob[i + 2] === "/";
      out += atStart && slashAfter ? "(?:.*/)?" : atStart && i + 2 === glob.length ? ".*" : "[^/]*";
      i += atStart && slashAfter ? 2 : 1;
    } else if (c === "*") {
      out += "[^/]*";
    } else if (c === "?") {
      out += "[^/]";
    } else if (c === "[" && glob.includes("]", i + 2)) {
      const end = glob.indexOf("]", i + 2);
      const negate = glob[i + 1] === "!" || glob[i + 1] === "^";
      const body = glob.slice(negate ? i + 2 : i + 1, end).replace(/[\\\]^[]/g, (m) => `\\${m}`);
      out += negate ? `[^${body}/]` : `[${body}]`;
      i = end;
    } else if (c === "{") {
      braces++;
      out += "(?:";
    } else if (c === "}" && braces > 0) {
      braces--;
      out += ")";
    } else if (c === "," && braces > 0) {
      out += "|";
    } else if (c === "\\" && i + 1 < glob.length) {
      out += RE2JS.quote(glob[++i]);
    } else {
      out += RE2JS.quote(c);
    }
  }
  if (braces > 0) throw new ToolError(`the glob has an unclosed "{".`);
  return out;
}
