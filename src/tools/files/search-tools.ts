import { lstat, readFile, realpath, stat } from "node:fs/promises";
import { glob } from "tinyglobby";
import { type Tool, ToolError } from "../tool.js";
import { looksBinary } from "./binary.js";
import type { FileToolDeps } from "./deps.js";
import { fileError } from "./errors.js";
import { displayPath, isInside, resolveInWorkspace } from "./workspace-path.js";

const MAX_MATCHES = 200;
const MAX_GLOB_RESULTS = 500;
const MAX_GREP_FILE_BYTES = 2 * 1024 * 1024;
const MAX_LINE_CHARS = 300;
const SKIPPED_FOLDERS = ["**/.git/**", "**/node_modules/**"];

export type GrepArgs = {
  pattern: string;
  path?: string;
  glob?: string;
};

export type GlobArgs = {
  pattern: string;
  path?: string;
};

export function createGrepTool(deps: FileToolDeps): Tool<GrepArgs> {
  return {
    name: "grep",
    description:
      "Search file contents in the workspace with a regular expression (JavaScript syntax; start with (?i) to " +
      `ignore case). Prints path:line: text, at most ${MAX_MATCHES} matches; skips binary files, .git and node_modules.`,
    parameters: {
      type: "object",
      properties: {
        pattern: { type: "string", minLength: 1, description: "Regular expression to look for." },
        path: { type: "string", description: "File or folder to search, relative to the workspace (default: all)." },
        glob: {
          type: "string",
          description: 'Only search files whose path matches this glob, e.g. "*.md" or "src/**/*.ts".',
        },
      },
      required: ["pattern"],
      additionalProperties: false,
    },
    readOnly: true,

    async execute(args, ctx) {
      const regex = compileSearchRegex(args.pattern);
      const workspace = await realpath(ctx.workspace);
      const base = await resolveInWorkspace(args.path, deps.scope(ctx.workspace), "read");
      const info = await stat(base).catch((err) => fileError(err, args.path ?? "."));
      const files = info.isDirectory() ? await listFiles(base, args.glob ?? "**/*", ctx.signal) : [base];

      // One match past the cap tells whether anything was left out.
      const matches: string[] = [];
      for (const file of files) {
        if (matches.length > MAX_MATCHES) break;
        const bytes = await readSearchable(file);
        if (!bytes) continue;
        const lines = bytes.toString("utf8").split("\n");
        for (let i = 0; i < lines.length && matches.length <= MAX_MATCHES; i++) {
          if (!regex.test(lines[i])) continue;
          const line = lines[i].replace(/\r$/, "");
          const shown = line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)}…` : line;
          matches.push(`${displayPath(file, workspace)}:${i + 1}: ${shown}`);
        }
      }
      const truncated = matches.length > MAX_MATCHES;
      matches.length = Math.min(matches.length, MAX_MATCHES);
      if (matches.length === 0) return `No matches for /${args.pattern}/ in ${files.length} file(s).`;
      if (truncated) matches.push(`(stopped at ${MAX_MATCHES} matches; narrow the pattern, path or glob)`);
      return matches.join("\n");
    },
  };
}

export function createGlobTool(deps: FileToolDeps): Tool<GlobArgs> {
  return {
    name: "glob",
    description: `Find files in the workspace by name pattern, e.g. "**/*.md" or "notes/2024-*". At most ${MAX_GLOB_RESULTS} paths, sorted.`,
    parameters: {
      type: "object",
      properties: {
        pattern: { type: "string", minLength: 1, description: "Glob pattern, relative to path." },
        path: {
          type: "string",
          description: "Folder to search from, relative to the workspace (default: the workspace).",
        },
      },
      required: ["pattern"],
      additionalProperties: false,
    },
    readOnly: true,

    async execute(args, ctx) {
      const workspace = await realpath(ctx.workspace);
      const base = await resolveInWorkspace(args.path, deps.scope(ctx.workspace), "read");
      const info = await stat(base).catch((err) => fileError(err, args.path ?? "."));
      if (!info.isDirectory()) throw new ToolError(`"${args.path}" is a file; glob needs a folder as path.`);
      const files = await listFiles(base, args.pattern, ctx.signal);
      if (files.length === 0) return `No files match ${args.pattern}.`;
      const shown = files.slice(0, MAX_GLOB_RESULTS).map((file) => displayPath(file, workspace));
      if (files.length > MAX_GLOB_RESULTS) shown.push(`… and ${files.length - MAX_GLOB_RESULTS} more`);
      return shown.join("\n");
    },
  };
}

/** `(?i)` at the start asks for a case-insensitive search, as in grep -i / ripgrep. */
export function compileSearchRegex(pattern: string): RegExp {
  const insensitive = pattern.startsWith("(?i)");
  try {
    return new RegExp(insensitive ? pattern.slice(4) : pattern, insensitive ? "i" : "");
  } catch (err) {
    throw new ToolError(`the pattern is not a valid regular expression: ${(err as Error).message}`);
  }
}

/** Files under `base` matching a glob, never following symlinks or climbing out of `base`. */
async function listFiles(base: string, pattern: string, signal: AbortSignal): Promise<string[]> {
  if (pattern.startsWith("/") || pattern.split("/").includes("..")) {
    throw new ToolError(`the glob "${pattern}" must stay inside the folder: no leading / and no .. parts.`);
  }
  // A bare "*.md" means any depth, like .gitignore patterns do.
  const effective = pattern.includes("/") ? pattern : `**/${pattern}`;
  const found = await glob(effective, {
    cwd: base,
    absolute: true,
    dot: true,
    onlyFiles: true,
    followSymbolicLinks: false,
    expandDirectories: false,
    ignore: SKIPPED_FOLDERS,
    signal,
  });
  return found.filter((file) => isInside(base, file)).sort();
}

/** The file's bytes when it is a regular, text, not-too-large file; undefined otherwise. */
async function readSearchable(file: string): Promise<Buffer | undefined> {
  const info = await lstat(file).catch(() => undefined);
  // Symlinks are skipped: the files they point to inside the workspace are searched anyway.
  if (!info?.isFile() || info.size > MAX_GREP_FILE_BYTES) return undefined;
  const bytes = await readFile(file).catch(() => undefined);
  return bytes && !looksBinary(bytes) ? bytes : undefined;
}
