import { closeSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { objectSchema, type Tool, type ToolContext, ToolError, type ToolParameters } from "../tool.js";
import { looksBinary } from "./binary.js";
import { compileGlob, MAX_GLOB_CHARS } from "./glob-pattern.js";
import { createLineSearch, GREP_STOPPED, MAX_PATTERN_CHARS } from "./line-search.js";
import { readOpened } from "./safe-io.js";
import { hiddenBelow, type Opened, openInScope } from "./safe-open.js";
import { MAX_TREE_ENTRIES, type TreeFile, visitFiles } from "./walk-tree.js";
import { displayPath, type FileToolDeps, fileScope } from "./workspace-path.js";

const MAX_MATCHES = 200;
const MAX_GLOB_RESULTS = 500;
const MAX_GREP_FILE_BYTES = 2 * 1024 * 1024;
/** Bytes searched per call at most; past it the search stops and says so. */
const MAX_GREP_TOTAL_BYTES = 64 * 1024 * 1024;
/** Hard limit of one grep call; the registry's tool timeout may stop it sooner. */
const GREP_TIME_LIMIT_SECONDS = 30;
const MAX_LINE_CHARS = 300;

export type GlobArgs = { pattern: string; path?: string };
export type GrepArgs = GlobArgs & { glob?: string };

/** The parameters grep and glob share: a pattern (of at most `maxLength`) and a folder to start from. */
function searchParameters(pattern: string, maxLength: number, path: string, extra = {}): ToolParameters {
  return objectSchema(["pattern"], {
    pattern: { type: "string", minLength: 1, maxLength, description: pattern },
    path: { type: "string", description: path },
    ...extra,
  });
}

type FoundFile = TreeFile & { shown: string };

/** Walks the folder to search (grep may name a file: `onFile`), skipping what the scope hides, under any name. */
async function searchTree(
  deps: FileToolDeps,
  args: GlobArgs,
  ctx: ToolContext,
  visit: (file: FoundFile) => Promise<boolean | undefined> | boolean,
  onFile?: (file: Opened, shown: string) => Promise<unknown>,
): Promise<{ truncated: boolean }> {
  const scope = fileScope(ctx, deps.home);
  const opened = openInScope(args.path, scope, { access: "read", want: "any" });
  try {
    const workspaceReal = realpathSync(ctx.workspace);
    if (!opened.stats.isDirectory()) {
      if (!onFile) throw new ToolError(`"${args.path}" is a file; glob needs a folder as path.`);
      await onFile(opened, displayPath(opened.path, workspaceReal));
      return { truncated: false };
    }
    return await visitFiles(opened.fd, hiddenBelow(scope, opened.path), ctx.signal, (file) =>
      visit({ ...file, shown: displayPath(join(opened.path, file.rel), workspaceReal) }),
    );
  } finally {
    closeSync(opened.fd);
  }
}

export function createGrepTool(deps: FileToolDeps): Tool<GrepArgs> {
  const searchLines = createLineSearch();
  return {
    name: "grep",
    description:
      "Search file contents in the workspace with a regular expression (RE2 syntax, as in ripgrep or Go: no " +
      "lookaround or backreferences; start with (?i) to ignore case). Prints path:line: text, at most " +
      `${MAX_MATCHES} matches; skips binary files, .git and node_modules.`,
    parameters: searchParameters(
      "Regular expression to look for.",
      MAX_PATTERN_CHARS,
      "File or folder to search, relative to the workspace (default: all).",
      {
        glob: {
          type: "string",
          maxLength: MAX_GLOB_CHARS,
          description: 'Only search files whose path matches this glob, e.g. "*.md" or "src/**/*.ts".',
        },
      },
    ),
    readOnly: true,
    // The registry aborts the call at this limit; the abort terminates the matching thread.
    timeoutSeconds: Math.min(GREP_TIME_LIMIT_SECONDS, deps.agent?.toolTimeoutSeconds ?? GREP_TIME_LIMIT_SECONDS),

    async execute(args, ctx) {
      const filter = compileGlob(args.glob ?? "**/*");
      await searchLines(args.pattern, "", 0, ctx.signal);
      // One match past the cap tells whether anything was left out.
      const matches: string[] = [];
      let files = 0;
      let bytesSearched = 0;
      let note = "";
      const searchFile = async (file: Pick<Opened, "fd" | "stats">, shown: string) => {
        if (file.stats.size > MAX_GREP_FILE_BYTES) return;
        if (bytesSearched + file.stats.size > MAX_GREP_TOTAL_BYTES) {
          note = `(stopped after ${MAX_GREP_TOTAL_BYTES / 1024 / 1024} MB searched; narrow the path or glob)`;
          return false;
        }
        const bytes = await readOpened(file, MAX_GREP_FILE_BYTES, shown).catch(() => undefined);
        if (!bytes || looksBinary(bytes)) return;
        files++;
        bytesSearched += bytes.length;
        const text = bytes.toString("utf8");
        const lines = text.split("\n");
        for (const i of await searchLines(args.pattern, text, MAX_MATCHES + 1 - matches.length, ctx.signal)) {
          const line = lines[i].replace(/\r$/, "");
          matches.push(
            `${shown}:${i + 1}: ${line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)}…` : line}`,
          );
        }
        return matches.length <= MAX_MATCHES;
      };
      const visit = async ({ rel, shown, open }: FoundFile) => {
        const file = filter.test(rel) ? open() : undefined;
        if (!file) return true;
        try {
          return await searchFile(file, shown);
        } finally {
          closeSync(file.fd);
        }
      };
      const walk = await searchTree(deps, args, ctx, visit, searchFile);
      if (walk.truncated) note ||= `(stopped after ${MAX_TREE_ENTRIES} entries; narrow the path or glob)`;
      if (ctx.signal.aborted) throw new ToolError(GREP_STOPPED);
      if (matches.length === 0) return `No matches for /${args.pattern}/ in ${files} file(s).${note ? ` ${note}` : ""}`;
      if (matches.length > MAX_MATCHES) {
        matches.splice(MAX_MATCHES, Infinity, `(stopped at ${MAX_MATCHES} matches; narrow the pattern, path or glob)`);
      }
      if (note) matches.push(note);
      return matches.join("\n");
    },
  };
}

export function createGlobTool(deps: FileToolDeps): Tool<GlobArgs> {
  return {
    name: "glob",
    description: `Find files in the workspace by name pattern, e.g. "**/*.md" or "notes/2024-*". At most ${MAX_GLOB_RESULTS} paths, sorted.`,
    parameters: searchParameters(
      "Glob pattern, relative to path.",
      MAX_GLOB_CHARS,
      "Folder to search from, relative to the workspace (default: the workspace).",
    ),
    readOnly: true,

    async execute(args, ctx) {
      const filter = compileGlob(args.pattern);
      const found: string[] = [];
      await searchTree(deps, args, ctx, ({ rel, shown }) => {
        if (filter.test(rel)) found.push(shown);
        return true;
      });
      if (found.length === 0) return `No files match ${args.pattern}.`;
      found.sort();
      const shown = found.slice(0, MAX_GLOB_RESULTS);
      if (found.length > MAX_GLOB_RESULTS) shown.push(`… and ${found.length - MAX_GLOB_RESULTS} more`);
      return shown.join("\n");
    },
  };
}
